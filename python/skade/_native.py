"""Loads skade's shared library (the C interface of skade.h) with ctypes.

The library is found, in order: the path in the environment variable SKADE_LIBRARY; a copy
inside this package (placed there by scripts/build_python.sh); the build tree of the source
checkout this package sits in (build/src/libskade.so). ctypes releases the GIL during every
call into it.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

from .errors import error_for

ABI_VERSION = 2
_LIBRARY_NAME = "libskade.so"


class ArrowSchema(ctypes.Structure):
    """The Arrow C Data Interface ArrowSchema (only passed around, never read here)."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_char_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


class ArrowArrayStream(ctypes.Structure):
    """The Arrow C stream interface struct; pyarrow fills and reads it."""

    _fields_ = [
        ("get_schema", ctypes.c_void_p),
        ("get_next", ctypes.c_void_p),
        ("get_last_error", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


def _candidates() -> list[Path]:
    found: list[Path] = []
    env = os.environ.get("SKADE_LIBRARY")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    found.append(here / _LIBRARY_NAME)
    # A source checkout: <root>/python/skade/_native.py → <root>/build/src/libskade.so.
    found.append(here.parent.parent / "build" / "src" / _LIBRARY_NAME)
    return found


_P = ctypes.c_void_p
_S = ctypes.c_char_p
_I64 = ctypes.c_int64
_PI64 = ctypes.POINTER(ctypes.c_int64)
_NAMES = ctypes.POINTER(ctypes.c_char_p)
_STREAM = ctypes.POINTER(ArrowArrayStream)
_SCHEMA = ctypes.POINTER(ArrowSchema)

# name: (argument types, result type)
_SIGNATURES: dict[str, tuple[list, object]] = {
    "skade_abi_version": ([], ctypes.c_int),
    "skade_open": ([_S, _S, ctypes.POINTER(_P)], ctypes.c_int),
    "skade_close": ([_P], None),
    "skade_namespaces": ([_P, _S, _STREAM], ctypes.c_int),
    "skade_namespace_create": ([_P, _S], ctypes.c_int),
    "skade_namespace_drop": ([_P, _S], ctypes.c_int),
    "skade_tables": ([_P, _S, _STREAM], ctypes.c_int),
    "skade_table_create": ([_P, _S, _SCHEMA, _NAMES, _I64, _S], ctypes.c_int),
    "skade_table_drop": ([_P, _S, ctypes.c_int], ctypes.c_int),
    "skade_table_schema": ([_P, _S, _SCHEMA], ctypes.c_int),
    "skade_read": ([_P, _S, _NAMES, _I64, _S, _PI64, _PI64, _PI64, _STREAM], ctypes.c_int),
    "skade_read_all": ([_P, _S, _NAMES, _I64, _S, _PI64, _PI64, _PI64, _STREAM], ctypes.c_int),
    "skade_snapshots": ([_P, _S, _STREAM], ctypes.c_int),
    "skade_sql": ([_P, _S, _STREAM], ctypes.c_int),
    "skade_append": ([_P, _S, _STREAM, _PI64, _PI64], ctypes.c_int),
    "skade_overwrite": ([_P, _S, _STREAM, _S, _PI64, _PI64], ctypes.c_int),
    "skade_upsert": ([_P, _S, _STREAM, _NAMES, _I64, _PI64, _PI64], ctypes.c_int),
    "skade_delete": ([_P, _S, _S, _PI64, _PI64], ctypes.c_int),
    "skade_commit_log": ([_P, _I64, _I64, _STREAM], ctypes.c_int),
    "skade_commit_head": ([_P, _PI64], ctypes.c_int),
    "skade_wait_commit": ([_P, _I64, _I64, _PI64], ctypes.c_int),
    "skade_interrupt": ([_P], None),
    "skade_last_error": ([], ctypes.c_char_p),
}

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The loaded library (loaded at the first call). OSError naming the paths tried when
    none loads, or when its interface version is not the one this package speaks."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried: list[str] = []
        for path in _candidates():
            if not path.is_file():
                tried.append(f"{path} (missing)")
                continue
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as exc:
                tried.append(f"{path} ({exc})")
                continue
            for name, (argtypes, restype) in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.argtypes = argtypes
                fn.restype = restype
            version = lib.skade_abi_version()
            if version != ABI_VERSION:
                raise OSError(f"{path} speaks skade C interface version {version}, this package {ABI_VERSION}")
            _lib = lib
            return lib
        raise OSError(
            "cannot load skade's library; set SKADE_LIBRARY to libskade.so, or build the package with "
            "scripts/build_python.sh. Tried: " + "; ".join(tried)
        )


def check(rc: int, message: str | None = None) -> None:
    """Raises the exception of a non-zero status code. `message` is the error read on the thread
    that made the call (skade_last_error is per thread); None reads it now."""
    if rc == 0:
        return
    if message is None:
        message = last_error()
    raise error_for(rc, message)


def last_error() -> str:
    raw = library().skade_last_error()
    return raw.decode("utf-8", "replace") if raw else ""


def text(value: str | None) -> bytes | None:
    """A str argument as UTF-8 (None stays NULL). Embedded NUL characters are refused."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"expected str, got {type(value).__name__}")
    if "\0" in value:
        raise error_for(1, "a NUL character in a name or predicate")
    return value.encode("utf-8")


def names(values: list[str] | tuple[str, ...] | None) -> tuple[ctypes.Array | None, int]:
    """A list of names as a C array of char* and its length."""
    if values is None:
        return None, 0
    if isinstance(values, str):
        values = [values]
    encoded = [text(v) for v in values]
    array = (ctypes.c_char_p * len(encoded))(*encoded)
    return array, len(encoded)
