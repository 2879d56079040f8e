"""skade for Python: an Apache Iceberg lake as zero-copy Arrow in pyarrow, pandas and Polars.

    import pyarrow as pa, skade
    with skade.open(warehouse="./lake") as lake:
        lake.create_namespace("db", exist_ok=True)
        lake.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                          identifier_fields=["id"], exist_ok=True)
        lake.append("db.t", pa.table({"id": [1, 2], "name": ["a", "b"]}))
        lake.scan("db.t", where="id > 1").read_all()
"""

from __future__ import annotations

from . import errors
from ._lake import CommitEvent, CommitResult, Lake, Snapshot, open
from .errors import (
    AlreadyExists,
    Cancelled,
    CommitUnknown,
    Conflict,
    Corruption,
    InternalError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    SkadeError,
    StorageError,
    Unauthorized,
    Unavailable,
    Unsupported,
)

__version__ = "0.1.0"

__all__ = ["open", "Lake", "CommitResult", "CommitEvent", "Snapshot", *errors.__all__]
