"""The Lake: one open skade lake (catalog + warehouse) from Python."""

from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import pyarrow as pa

from . import _native
from ._native import ArrowArrayStream, ArrowSchema, check, names, text
from .errors import AlreadyExists, InvalidArgument

if TYPE_CHECKING:  # optional dependencies
    import pandas
    import polars

__all__ = ["Lake", "CommitResult", "CommitEvent", "Snapshot", "open"]

# How long one wait for commits blocks in the library: Ctrl-C is noticed between waits.
_WAIT_SLICE_MS = 200


class _CallThread:
    """The thread that runs the library's calls made on the main thread (Lake._call), so that the
    main thread stays free for Ctrl-C. One long-lived thread: starting a thread per call cost
    0.2 ms of a 1.4 ms small read. Started on first use (again after a fork)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, work: Callable[[], None]) -> threading.Event:
        """Runs `work` on the thread; the event is set once it has returned."""
        done = threading.Event()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="skade calls", daemon=True)
                self._thread.start()
            self._jobs.put((work, done))
        return done

    def _run(self) -> None:
        while True:
            work, done = self._jobs.get()
            try:
                work()
            finally:
                done.set()


_CALLS = _CallThread()


@dataclass(frozen=True)
class CommitResult:
    """What a write committed: its snapshot and its place in the lake's commit log; both None
    when the write changed nothing (a delete that matched no row)."""

    snapshot_id: int | None
    commit_seq: int | None

    @property
    def committed(self) -> bool:
        return self.commit_seq is not None


@dataclass(frozen=True)
class CommitEvent:
    """One entry of the lake's commit log (any table, any process)."""

    commit_seq: int
    table: str
    snapshot_id: int | None
    operation: str
    added_records: int
    deleted_records: int
    committed_at: _dt.datetime
    metadata_location: str


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of a table."""

    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp: _dt.datetime
    operation: str
    current: bool
    summary: dict[str, str] = field(default_factory=dict)


def _reader_of(data: Any) -> pa.RecordBatchReader:
    """Rows to write as a RecordBatchReader, without copying where the input allows it."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]).to_reader()
    module = type(data).__module__ or ""
    if module.startswith("pandas") and type(data).__name__ == "DataFrame":
        # The index is not data (a RangeIndex is the common case): columns only.
        return pa.Table.from_pandas(data, preserve_index=False).to_reader()
    if module.startswith("polars") and type(data).__name__ == "LazyFrame":
        data = data.collect()
    if hasattr(data, "__arrow_c_stream__"):  # Polars DataFrames, other Arrow producers
        return pa.RecordBatchReader.from_stream(data)
    raise TypeError(
        "rows must be a pyarrow Table, RecordBatch or RecordBatchReader, a pandas or Polars DataFrame, "
        f"or an object with __arrow_c_stream__; got {type(data).__name__}"
    )


def _as_of_ms(as_of: _dt.datetime | _dt.date | int | None) -> int | None:
    if as_of is None:
        return None
    if isinstance(as_of, bool):
        raise TypeError("as_of must be a datetime or milliseconds since the epoch")
    if isinstance(as_of, int):
        return as_of
    if isinstance(as_of, _dt.datetime):
        return int(as_of.timestamp() * 1000)  # a naive datetime is local time, as datetime.timestamp() takes it
    raise TypeError("as_of must be a datetime or milliseconds since the epoch")


def _utc_from_ms(ms: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)


class Lake:
    """An open lake: a catalog (SQLite in the warehouse by default) and its warehouse.

    Thread-safe: one Lake may be used from several threads at once; every call releases the
    GIL while skade works. Readers returned by scan() and sql() stay readable after close().
    Use as a context manager, or call close().
    """

    def __init__(self, warehouse: str, catalog: str | None = None) -> None:
        self._lib = _native.library()
        handle = ctypes.c_void_p()
        rc = self._lib.skade_open(text(str(warehouse)), text(catalog), ctypes.byref(handle))
        check(rc)
        self._handle: int | None = handle.value
        self._lock = threading.Lock()
        self._active = 0  # calls running now: close() waits for none
        self._idle = threading.Condition(self._lock)
        self.warehouse = str(warehouse)
        self.catalog = catalog

    # ---- lifetime ----

    def close(self) -> None:
        """Closes the lake (waits for calls running on other threads). Idempotent."""
        with self._idle:
            while self._active:
                self._idle.wait()
            handle, self._handle = self._handle, None
        if handle is not None:
            self._lib.skade_close(handle)

    def __enter__(self) -> "Lake":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else "open"
        return f"<skade.Lake {self.warehouse!r} {state}>"

    @contextlib.contextmanager
    def _using(self) -> Iterator[int]:
        """The library's handle of the lake, counted as in use (close() waits) while held."""
        with self._lock:
            if self._handle is None:
                raise InvalidArgument("the lake is closed")
            handle = self._handle
            self._active += 1
        try:
            yield handle
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def _call(self, name: str, *args: Any) -> None:
        """Calls skade_<name>(lake, *args) and raises its error. On the main thread the call runs
        on the helper thread (_CallThread), so that Ctrl-C interrupts it (skade_interrupt) and
        raises KeyboardInterrupt once it has stopped: the lake stays usable."""
        fn: Callable[..., int] = getattr(self._lib, name)
        with self._using() as handle:
            if threading.current_thread() is not threading.main_thread():
                rc = fn(handle, *args)
                check(rc, _native.last_error() if rc else "")
                return
            box: dict[str, Any] = {}

            def work() -> None:
                try:
                    rc = fn(handle, *args)
                    box["rc"] = rc
                    box["message"] = _native.last_error() if rc else ""
                except BaseException as e:  # (ctypes' own errors: raised on the caller's thread)
                    box["error"] = e

            done = _CALLS.submit(work)
            try:
                while not done.wait(0.25):
                    pass
            except KeyboardInterrupt:
                self._lib.skade_interrupt(handle)
                while not done.is_set():
                    try:
                        done.wait(0.25)
                    except KeyboardInterrupt:
                        self._lib.skade_interrupt(handle)
                raise
            if "error" in box:
                raise box["error"]
            check(box["rc"], box["message"])

    def _stream(self, name: str, *args: Any) -> pa.RecordBatchReader:
        stream = ArrowArrayStream()
        self._call(name, *args, ctypes.byref(stream))
        return pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))

    def _write(self, name: str, *args: Any) -> CommitResult:
        snapshot_id = ctypes.c_int64(0)
        commit_seq = ctypes.c_int64(0)
        self._call(name, *args, ctypes.byref(snapshot_id), ctypes.byref(commit_seq))
        return CommitResult(snapshot_id.value or None, commit_seq.value or None)

    def _rows(self, data: Any) -> ArrowArrayStream:
        reader = _reader_of(data)
        stream = ArrowArrayStream()
        reader._export_to_c(ctypes.addressof(stream))
        return stream

    def interrupt(self) -> None:
        """Interrupts the scans, queries and waits running on this lake now (from any thread)."""
        with self._lock:
            if self._handle is not None:
                self._lib.skade_interrupt(self._handle)

    # ---- namespaces and tables ----

    def list_namespaces(self, parent: str | None = None) -> list[str]:
        """The namespaces (every one at any depth, or those below `parent`), sorted, as dotted names."""
        return self._stream("skade_namespaces", text(parent)).read_all().column(0).to_pylist()

    def create_namespace(self, namespace: str, *, exist_ok: bool = False) -> None:
        """Creates a namespace ("db", or nested "a.b"). AlreadyExists unless exist_ok."""
        try:
            self._call("skade_namespace_create", text(namespace))
        except AlreadyExists:
            if not exist_ok:
                raise

    def drop_namespace(self, namespace: str) -> None:
        """Drops an empty namespace. NotFound if missing."""
        self._call("skade_namespace_drop", text(namespace))

    def list_tables(self, namespace: str | None = None) -> list[str]:
        """The tables ("ns.table") of a namespace, or of the whole lake, sorted."""
        return self._stream("skade_tables", text(namespace)).read_all().column("table").to_pylist()

    def table_exists(self, table: str) -> bool:
        """Whether "ns.table" exists."""
        from .errors import NotFound

        try:
            self.schema(table)
            return True
        except NotFound:
            return False

    def create_table(
        self,
        table: str,
        schema: pa.Schema | Any,
        *,
        identifier_fields: Sequence[str] | None = None,
        partition_by: str | None = None,
        exist_ok: bool = False,
    ) -> None:
        """Creates "ns.table" with the columns of a pyarrow schema (or anything with
        __arrow_c_schema__, e.g. a Polars schema through pyarrow). Fields that are not nullable
        become required columns; `identifier_fields` (the row key of upserts) become required
        too. `partition_by` takes Iceberg transforms as text: "day(ts), bucket(16, id)".
        AlreadyExists unless exist_ok; InvalidArgument for types Iceberg cannot hold."""
        if not isinstance(schema, pa.Schema):
            schema = pa.schema(schema)
        c_schema = ArrowSchema()
        schema._export_to_c(ctypes.addressof(c_schema))
        identifiers, n = names(list(identifier_fields) if identifier_fields is not None else None)
        try:
            self._call("skade_table_create", text(table), ctypes.byref(c_schema), identifiers, n, text(partition_by))
        except AlreadyExists:
            if not exist_ok:
                raise

    def drop_table(self, table: str, *, purge: bool = False) -> None:
        """Drops "ns.table" from the catalog; with purge=True its files too (only inside the
        warehouse: else PermissionDenied and nothing is dropped)."""
        self._call("skade_table_drop", text(table), 1 if purge else 0)

    def schema(self, table: str) -> pa.Schema:
        """The current schema of "ns.table" as pyarrow sees its scans."""
        c_schema = ArrowSchema()
        self._call("skade_table_schema", text(table), ctypes.byref(c_schema))
        return pa.Schema._import_from_c(ctypes.addressof(c_schema))

    def snapshots(self, table: str) -> list[Snapshot]:
        """The snapshots of "ns.table", oldest first."""
        rows = self._stream("skade_snapshots", text(table)).read_all().to_pylist()
        return [
            Snapshot(
                snapshot_id=r["snapshot_id"],
                parent_snapshot_id=r["parent_snapshot_id"],
                sequence_number=r["sequence_number"],
                timestamp=_utc_from_ms(r["timestamp_ms"]),
                operation=r["operation"],
                current=r["current"],
                summary=dict(r["summary"]),
            )
            for r in rows
        ]

    # ---- reads ----

    def scan(
        self,
        table: str,
        *,
        where: str | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: _dt.datetime | int | None = None,
        limit: int | None = None,
    ) -> pa.RecordBatchReader:
        """Reads "ns.table" as a stream of record batches (zero-copy from skade's engine).

        where: one SQL boolean expression over the columns ("amount > 10 AND region = 'eu'").
        columns: the columns to read, in this order (default all).
        snapshot_id / as_of: time travel to a snapshot, or to the one current at a time (a
        datetime, or milliseconds since the epoch); not both.
        limit: at most this many rows.
        """
        options = {"where": where, "columns": columns, "snapshot_id": snapshot_id, "as_of": as_of, "limit": limit}
        return self._read("skade_read", table, options)

    _SCAN_OPTIONS = frozenset({"where", "columns", "snapshot_id", "as_of", "limit"})

    def _read(self, function: str, table: str, options: dict[str, Any]) -> pa.RecordBatchReader:
        """Calls skade_read or skade_read_all with scan()'s options (TypeError for others)."""
        unknown = set(options) - self._SCAN_OPTIONS
        if unknown:
            raise TypeError(f"unknown scan option(s): {', '.join(sorted(unknown))}")
        columns = options.get("columns")
        cols, n = names(list(columns) if columns is not None else None)
        snapshot_id = options.get("snapshot_id")
        snap = ctypes.byref(ctypes.c_int64(snapshot_id)) if snapshot_id is not None else None
        at_ms = _as_of_ms(options.get("as_of"))
        at = ctypes.byref(ctypes.c_int64(at_ms)) if at_ms is not None else None
        limit = options.get("limit")
        lim = ctypes.byref(ctypes.c_int64(limit)) if limit is not None else None
        return self._stream(function, text(table), cols, n, text(options.get("where")), snap, at, lim)

    def to_arrow(self, table: str, **scan_options: Any) -> pa.Table:
        """The rows scan() reads, as one pyarrow Table (same options), in no particular
        order (an Iceberg table has none; scan() gives them file by file). Faster than
        scan().read_all(): skade's engine converts the rows in its worker threads, in
        batches of up to 122,880 rows, and returns when all are read."""
        return self._read("skade_read_all", table, scan_options).read_all()

    def to_pandas(self, table: str, **scan_options: Any) -> "pandas.DataFrame":
        """to_arrow() as a pandas DataFrame (needs pandas)."""
        return self.to_arrow(table, **scan_options).to_pandas()

    def to_polars(self, table: str, **scan_options: Any) -> "polars.DataFrame":
        """to_arrow() as a Polars DataFrame (needs polars; zero-copy where the types allow)."""
        import polars as pl

        return pl.from_arrow(self.to_arrow(table, **scan_options))

    def sql(self, query: str) -> pa.RecordBatchReader:
        """Runs one SQL statement over the lake as `skade sql` does; namespaces are schemas
        (db.orders, "a.b".t), `t AT (VERSION => id)` reads a snapshot. A query streams its rows;
        an Iceberg write statement (INSERT, UPDATE, DELETE, MERGE, CREATE/DROP TABLE…) commits
        and returns one row (statement, rows)."""
        return self._stream("skade_sql", text(query))

    # ---- writes ----

    def append(self, table: str, data: Any) -> CommitResult:
        """Appends rows (a pyarrow Table/RecordBatch/RecordBatchReader, a pandas or Polars
        DataFrame) to "ns.table" in one commit. Columns match by name; values convert to the
        columns' types only exactly (InvalidArgument otherwise, and nothing is committed)."""
        return self._write("skade_append", text(table), ctypes.byref(self._rows(data)))

    def overwrite(self, table: str, data: Any, *, where: str | None = None) -> CommitResult:
        """Replaces the rows matching `where` (default: every row) with `data`, atomically."""
        return self._write("skade_overwrite", text(table), ctypes.byref(self._rows(data)), text(where))

    def upsert(self, table: str, data: Any, *, keys: Sequence[str] | None = None) -> CommitResult:
        """Inserts `data`, replacing the rows whose `keys` (default: the table's identifier
        fields) match, in one commit. InvalidArgument for duplicate keys within `data`."""
        key_array, n = names(list(keys) if keys is not None else None)
        return self._write("skade_upsert", text(table), ctypes.byref(self._rows(data)), key_array, n)

    def delete(self, table: str, where: str) -> CommitResult:
        """Deletes the rows matching `where`; commits nothing when none matches."""
        if where is None or where == "":
            raise InvalidArgument("delete needs a where predicate")
        return self._write("skade_delete", text(table), text(where))

    # ---- commits ----

    def last_commit_seq(self) -> int:
        """The newest commit_seq of the lake's commit log (0 when empty)."""
        head = ctypes.c_int64(0)
        self._call("skade_commit_head", ctypes.byref(head))
        return head.value

    def commits(
        self,
        after: int = 0,
        *,
        follow: bool = False,
        table: str | None = None,
        timeout: float | None = None,
    ) -> Iterator[CommitEvent]:
        """The commit log after commit_seq `after`, oldest first, as CommitEvents (of `table`
        only, if given). With follow=True it then waits for new commits — of this process or
        any other writing to the lake — and yields them as they land, until `timeout` seconds
        pass without one (default: forever; Ctrl-C stops it)."""
        cursor = after
        page = 1000
        while True:
            entries = self._stream("skade_commit_log", ctypes.c_int64(cursor), ctypes.c_int64(page)).read_all()
            for r in entries.to_pylist():
                cursor = r["commit_seq"]
                if table is not None and r["table"] != table:
                    continue
                yield CommitEvent(
                    commit_seq=r["commit_seq"],
                    table=r["table"],
                    snapshot_id=r["snapshot_id"],
                    operation=r["operation"],
                    added_records=r["added_records"],
                    deleted_records=r["deleted_records"],
                    committed_at=_dt.datetime.fromtimestamp(r["committed_at_us"] / 1e6, tz=_dt.timezone.utc),
                    metadata_location=r["metadata_location"],
                )
            if entries.num_rows == page:
                continue
            if not follow or not self._wait_for_commit(cursor, timeout):
                return

    def _wait_for_commit(self, after: int, timeout: float | None) -> bool:
        """Waits in short slices (Ctrl-C is noticed between them) for a commit after `after`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        head = ctypes.c_int64(0)
        while True:
            slice_ms = _WAIT_SLICE_MS
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                slice_ms = max(1, min(slice_ms, int(left * 1000)))
            with self._using() as handle:
                rc = self._lib.skade_wait_commit(handle, after, slice_ms, ctypes.byref(head))
                check(rc, _native.last_error() if rc else "")
            if head.value > after:
                return True


def open(warehouse: str, catalog: str | None = None) -> Lake:  # noqa: A001 (the package's entry point)
    """Opens a lake: `warehouse` is a folder (created if missing) or "s3://bucket/prefix";
    `catalog` a catalog URI as the CLI's --catalog takes it (default: the SQLite catalog
    WAREHOUSE/catalog.db)."""
    return Lake(warehouse, catalog)
