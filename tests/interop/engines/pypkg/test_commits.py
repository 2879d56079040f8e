"""Commit events (also another process's), threads, and Ctrl-C in the middle of work."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pyarrow as pa
import pytest

import skade
from conftest import run_cli

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def test_commits_lists_the_log(lake):
    lake.create_table("db.t", SCHEMA)
    appended = lake.append("db.t", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    events = list(lake.commits())
    assert [(e.commit_seq, e.table, e.operation) for e in events] == [(1, "db.t", "create"), (2, "db.t", "append")]
    assert events[1].snapshot_id == appended.snapshot_id and events[1].added_records == 2
    assert list(lake.commits(after=1)) == events[1:]
    assert list(lake.commits(table="db.other")) == []
    # follow with a timeout and nothing new: ends.
    started = time.monotonic()
    assert list(lake.commits(after=2, follow=True, timeout=0.3)) == []
    assert 0.25 < time.monotonic() - started < 5


def test_follow_sees_the_commits_of_another_process(lake, warehouse, skade_bin):
    lake.create_table("db.t", SCHEMA)
    head = lake.last_commit_seq()
    # The CLI, another process, appends twice while this one follows the log.
    writer = subprocess.Popen(
        [
            "bash",
            "-c",
            'sleep 0.3; "$0" --warehouse "$1" ingest db.t --sql "SELECT range AS id, \'x\' AS v FROM range(7)" '
            '&& "$0" --warehouse "$1" ingest db.t --sql "SELECT 100 AS id, \'y\' AS v"',
            skade_bin,
            str(warehouse),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    try:
        for event in lake.commits(after=head, follow=True, timeout=30):
            seen.append(event)
            if len(seen) == 2:
                break
    finally:
        _, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert [(e.commit_seq, e.table, e.operation, e.added_records) for e in seen] == [
        (head + 1, "db.t", "append", 7),
        (head + 2, "db.t", "append", 1),
    ]
    assert seen[1].snapshot_id == [s.snapshot_id for s in lake.snapshots("db.t") if s.current][0]
    assert lake.to_arrow("db.t").num_rows == 8


def test_the_cli_reads_what_python_wrote(lake, warehouse, skade_bin):
    lake.create_table("db.t", SCHEMA)
    lake.append("db.t", pa.table({"id": [1, 2, 3], "v": ["a", "b", None]}, schema=SCHEMA))
    out = run_cli(skade_bin, warehouse, "sql", "SELECT count(*) AS n, count(v) AS nv FROM db.t")
    assert "3" in out and "2" in out


def test_threads_share_a_lake(lake):
    lake.create_table("db.t", SCHEMA)
    results: list[skade.CommitResult] = []
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(5):
                ids = list(range(k * 1000 + i * 10, k * 1000 + i * 10 + 10))
                results.append(lake.append("db.t", pa.table({"id": ids, "v": [str(k)] * 10}, schema=SCHEMA)))
                assert lake.to_arrow("db.t", where=f"id = {ids[0]}").num_rows == 1
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(results) == 20 and len({r.commit_seq for r in results}) == 20
    table = lake.to_arrow("db.t")
    assert sorted(table.column("id").to_pylist()) == sorted(
        k * 1000 + i * 10 + j for k in range(4) for i in range(5) for j in range(10)
    )


LONG_QUERY = "SELECT sum(hash(range)) AS s FROM range(200000000000)"


def interrupt_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_interrupts_a_running_query_and_the_lake_stays_usable(lake):
    lake.create_table("db.t", SCHEMA)
    lake.append("db.t", pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    started = time.monotonic()
    timer = interrupt_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        lake.sql(LONG_QUERY).read_all()
    timer.join()
    assert time.monotonic() - started < 20  # stopped, not run to its end
    assert lake.to_arrow("db.t").to_pylist() == [{"id": 1, "v": "a"}]
    assert lake.sql("SELECT 41 + 1 AS x").read_all().to_pylist() == [{"x": 42}]


def test_ctrl_c_while_reading_a_scan(lake):
    lake.create_table("db.t", SCHEMA)
    n = 300_000
    lake.append("db.t", pa.table({"id": pa.array(range(n), pa.int64()), "v": ["x"] * n}, schema=SCHEMA))
    read = 0
    with pytest.raises(KeyboardInterrupt):
        for batch in lake.scan("db.t"):
            read += batch.num_rows
            if read == batch.num_rows:
                os.kill(os.getpid(), signal.SIGINT)  # delivered between batches
            time.sleep(0.001)
    assert 0 < read < n
    # The abandoned reader is released; the lake reads and writes on.
    assert lake.to_arrow("db.t").num_rows == n
    lake.append("db.t", pa.table({"id": [n], "v": ["y"]}, schema=SCHEMA))
    assert lake.to_arrow("db.t", where=f"id = {n}").num_rows == 1


def test_the_gil_is_released_while_skade_works(lake):
    box: dict[str, object] = {}

    def query() -> None:
        try:
            box["rows"] = lake.sql("SELECT sum(hash(range)) AS s FROM range(300000000)").read_all().num_rows
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    worker = threading.Thread(target=query)
    worker.start()
    ticks = 0
    while worker.is_alive():
        ticks += 1  # Python keeps running beside the query
        time.sleep(0.001)
    worker.join()
    assert box.get("rows") == 1, box
    assert ticks > 10
