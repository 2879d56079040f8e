"""Exceptions raised by skade, one class per skade status code."""

from __future__ import annotations

__all__ = [
    "SkadeError",
    "InvalidArgument",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "CommitUnknown",
    "Unsupported",
    "Unauthorized",
    "StorageError",
    "Corruption",
    "Unavailable",
    "InternalError",
    "PermissionDenied",
    "ResourceExhausted",
    "Cancelled",
]


class SkadeError(Exception):
    """A failure reported by skade. ``code`` is skade's status code (``SKADE_E_*`` of skade.h),
    ``message`` its message."""

    code: int = -1

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgument(SkadeError, ValueError):
    """Bad input: a malformed name or predicate, an unknown column, a value that does not
    convert exactly to its column's type, a type Iceberg cannot hold."""

    code = 1


class NotFound(SkadeError, LookupError):
    """A namespace, table or snapshot that does not exist."""

    code = 2


class AlreadyExists(SkadeError):
    """A namespace or table that exists already."""

    code = 3


class Conflict(SkadeError):
    """A concurrent change that this one cannot be applied on top of (or a namespace that is
    not empty)."""

    code = 4


class CommitUnknown(SkadeError):
    """The commit may or may not have happened (the commit log tells)."""

    code = 5


class Unsupported(SkadeError, NotImplementedError):
    """Something skade does not do (yet)."""

    code = 6


class Unauthorized(SkadeError):
    """The catalog refused the credentials."""

    code = 7


class StorageError(SkadeError):
    """Reading or writing a file or object failed."""

    code = 8


class Corruption(SkadeError):
    """A file that does not hold what it should."""

    code = 9


class Unavailable(SkadeError):
    """A service (catalog, object store) that could not be reached."""

    code = 10


class InternalError(SkadeError):
    """A bug in skade."""

    code = 11


class PermissionDenied(SkadeError, PermissionError):
    """An operation the lake does not allow (e.g. purging a table outside the warehouse)."""

    code = 12


class ResourceExhausted(SkadeError):
    """A limit was reached."""

    code = 13


class Cancelled(SkadeError):
    """The operation was interrupted."""

    code = 14


_BY_CODE: dict[int, type[SkadeError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        AlreadyExists,
        Conflict,
        CommitUnknown,
        Unsupported,
        Unauthorized,
        StorageError,
        Corruption,
        Unavailable,
        InternalError,
        PermissionDenied,
        ResourceExhausted,
        Cancelled,
    )
}


def error_for(code: int, message: str) -> SkadeError:
    """The exception for a skade status code (SkadeError for a code this package does not know)."""
    cls = _BY_CODE.get(code, SkadeError)
    return cls(message or f"skade error {code}", code)
