"""Several `skade serve` behind nginx (bench/RESULTS.md, section z; issue 35, item 4).

With 1 and then 3 servers on one PostgreSQL catalog and an s3:// warehouse (s3rver on loopback),
behind nginx from Debian's packages (round robin, no affinity; tests/interop/engines/python/
scaleout.py sets it all up, as test_scaleout.py does), every client call going through nginx:

  queries      --query-threads threads, each its own ADBC Flight SQL connection, run
               `SELECT sum(qty) FROM lb.items WHERE id < 100` (1,000 rows, one file) again and
               again for --seconds: queries/s, p50, p99.
  sql commits  --writer-threads threads, each a table of its own, run one-row `INSERT … VALUES`
               over Flight SQL (ADBC execute: one commit each): commits/s, p50, p99.
  rest commits the same with PyIceberg appends of one row through the REST catalog (load the
               table, write a Parquet file, manifest and manifest list to S3, commitTable).
  one table    (3 servers) --writer-threads INSERT threads and one PyIceberg appender on one
               table for --seconds: the slow committer against the fast ones.
  kill         (3 servers) queries and guarded INSERTs together for --seconds, server 1
               SIGKILLed a third of the way in; latency of the calls started in the 3 s from
               the kill against those before it, clients retrying a failed call at once; then
               every acknowledged write is checked present exactly once and the log dense.

Alongside, the figures a plan for 50 servers rests on:
  - PostgreSQL connections of the lake's database (pg_stat_activity), sampled every 0.5 s:
    idle after start and the most during each phase, and how many are LISTEN connections;
  - PostgreSQL transactions per commit (pg_stat_database, after its stats were flushed),
    minus what idle servers do on their own per second (the watchers' safety checks);
  - how fast a commit on one server reaches the change feed (SSE) of another (LISTEN/NOTIFY
    wakes it; it reads the log);
  - bytes per row of the commit log and of the idempotency keys (pg_total_relation_size);
  - CPU seconds per process group (client, skade, s3rver, PostgreSQL, nginx, the rest of the
    machine) per phase: on 2 cores everything here shares them.

Run (from the repository root, with the Python interop suite's virtualenv):
  SKADE_BIN=build/src/skade "$(scripts/interop_env.sh python venv)/bin/python" bench/scaleout_bench.py
Options: --seconds 10 --query-threads 8 --writer-threads 4 --instances 1,3 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "interop" / "engines" / "python"))

import scaleout as so  # noqa: E402

QUERY = "SELECT sum(qty) FROM lb.items WHERE id < 100"
QUERY_ANSWER = sum(i % 7 for i in range(100))
# pg_stat_database is flushed by an idle backend at most this long after its transactions
# (PostgreSQL 15: PGSTAT_IDLE_INTERVAL, 10 s).
STATS_FLUSH_S = 11.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of values; NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# ---- CPU per process group ------------------------------------------------------------------------

def _processes() -> dict[int, tuple[int, float]]:
    """pid → (parent pid, CPU seconds) of every process now."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return out


def _machine_cpu() -> float:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait
    return (sum(fields[:8]) - fields[3] - fields[4]) / CLK_TCK


class CpuMeter:
    """CPU seconds of the client (this process alone: the servers are its children), the skade
    servers, s3rver, PostgreSQL and nginx (each with its descendants), and of everything else on
    the machine (other users' work included). A process that exits within a phase takes its CPU
    time along (the PostgreSQL backends of a killed server: that group can come out negative)."""

    def __init__(self, roots):
        self.roots = roots  # () -> {group: ([root pids], with descendants)}

    def snapshot(self) -> dict[str, float]:
        procs = _processes()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        out: dict[str, float] = {}
        for group, (roots, descendants) in self.roots().items():
            seen, stack = set(), list(roots)
            while stack:
                pid = stack.pop()
                if pid in seen or pid not in procs:
                    continue
                seen.add(pid)
                if descendants:
                    stack += children.get(pid, [])
            out[group] = sum(procs[p][1] for p in seen)
        out["machine"] = _machine_cpu()
        return out

    @staticmethod
    def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        d = {g: round(after.get(g, 0) - before.get(g, 0), 1) for g in after}
        d["rest of machine"] = round(d.pop("machine") - sum(d.values()), 1)
        return d


# ---- PostgreSQL -----------------------------------------------------------------------------------

class PgSampler:
    """The lake database's connections every 0.5 s while running (from the `postgres` database,
    so that the sampler's own connection is not counted)."""

    def __init__(self, d: so.Deployment):
        self.d = d
        self.samples: list[tuple[int, int]] = []  # (connections, of which LISTEN)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def count(self) -> tuple[int, int]:
        (row,) = self.d.infra.pg.sql("postgres", "SELECT count(*), count(*) FILTER (WHERE query = 'LISTEN "
                                                 f"skade_commits') FROM pg_stat_activity WHERE datname = "
                                                 f"'{self.d.database}'")
        return int(row[0]), int(row[1])

    def __enter__(self):
        self.samples = []
        self._stop.clear()

        def run():
            while not self._stop.is_set():
                self.samples.append(self.count())
                self._stop.wait(0.5)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)

    def most(self) -> int:
        return max((s[0] for s in self.samples), default=0)


def xacts(d: so.Deployment) -> int:
    (row,) = d.infra.pg.sql("postgres", "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = "
                                        f"'{d.database}'")
    return int(row[0])


# ---- load -----------------------------------------------------------------------------------------

class Timed:
    """Calls of one kind: (start wall time, seconds to an answer with retries, attempts)."""

    def __init__(self):
        self.calls: list[tuple[float, float, int]] = []
        self.mu = threading.Lock()

    def add(self, start: float, seconds: float, attempts: int) -> None:
        with self.mu:
            self.calls.append((start, seconds, attempts))

    def summary(self, seconds: float, since: float = 0.0, until: float = float("inf")) -> dict:
        chosen = [c for c in self.calls if since <= c[0] < until]
        lat = [c[1] for c in chosen]
        return {"calls": len(chosen), "per_s": round(len(chosen) / seconds, 1) if seconds else None,
                "p50_ms": ms(percentile(lat, 50)), "p99_ms": ms(percentile(lat, 99)),
                "max_ms": ms(max(lat, default=float("nan"))), "retried": sum(c[2] > 1 for c in chosen)}


def run_threads(n: int, seconds: float, body) -> float:
    """body(i, stop_event) in n threads for `seconds`; returns the wall time they ran."""
    stop = threading.Event()
    errors: list[str] = []

    def guard(i):
        try:
            body(i, stop)
        except BaseException as e:  # noqa: BLE001 - reported, ends the run
            errors.append(f"thread {i}: {type(e).__name__}: {e}")
            stop.set()

    threads = [threading.Thread(target=guard, args=(i,), daemon=True) for i in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join(120)
    if errors:
        raise RuntimeError("; ".join(errors))
    return time.monotonic() - t0


def query_loop(writers: so.Writers, timed: Timed, failures: list | None = None):
    """Queries until stopped; each failed attempt (retried at once) goes to failures."""
    def body(i, stop):
        while not stop.is_set():
            errors: list[str] = []
            start, t0 = time.time(), time.monotonic()
            rows = writers.query(QUERY, errors=errors)
            if rows != [(QUERY_ANSWER,)]:
                raise AssertionError(f"query answered {rows}")
            timed.add(start, time.monotonic() - t0, len(errors) + 1)
            if failures is not None:
                failures.extend(e[:160] for e in errors)
    return body


def write_loop(all_writers: list[so.Writers], kind: str, timed: Timed, writes: list | None = None,
               failures: list | None = None):
    """Thread i writes with all_writers[i] (its own table)."""
    def body(i, stop):
        while not stop.is_set():
            w = all_writers[i].write(kind)
            if not w.acknowledged:
                raise AssertionError(f"{kind} write not acknowledged: {w.errors[-1:]}")
            timed.add(w.started, w.seconds, w.attempts)
            if writes is not None:
                writes.append(w)
            if failures is not None:
                failures.extend(e[:160] for e in w.errors)
    return body


# ---- the phases -----------------------------------------------------------------------------------

def measure(infra: so.Infra, instances: int, args, log_dir: Path) -> dict:
    result: dict = {"instances": instances}
    d = so.Deployment(infra, log_dir, instances=instances)
    meter = CpuMeter(lambda: {
        "client": ([os.getpid()], False),
        "skade": ([s.proc.pid for s in d.servers if s.alive()], True),
        "s3rver": ([infra.s3.proc.pid], True),
        "postgres": ([int((infra.pg.dir / "data" / "postmaster.pid").read_text().split()[0])], True),
        "nginx": ([d.balancer.proc.pid], True),
    })
    try:
        d.cli("create", "lb.items", "--schema", "id BIGINT NOT NULL, name VARCHAR, qty INTEGER")
        d.cli("ingest", "lb.items", "--sql",
              "SELECT range AS id, 'item' || range AS name, (range % 7)::INTEGER AS qty FROM range(1000)")
        w = args.writer_threads
        sql_tables = [{"sql-plain": f"lb.c{i}", "sql": f"lb.c{i}"} for i in range(w)]
        rest_tables = [{"rest": f"lb.r{i}"} for i in range(w)]
        for t in sql_tables + rest_tables:
            so.create_write_tables(d, t)
        adapter = so.RetryingAdapter()
        readers = so.Writers(d, adapter)
        sampler = PgSampler(d)
        time.sleep(1.0)
        result["pg_connections_idle"], result["pg_listen_connections"] = sampler.count()

        # Idle servers' own PostgreSQL transactions per second (the watchers' safety checks).
        before, t0 = xacts(d), time.monotonic()
        time.sleep(STATS_FLUSH_S)
        result["pg_xacts_per_s_idle"] = round((xacts(d) - before) / (time.monotonic() - t0), 2)

        def phase(name: str, threads: int, body):
            c0 = meter.snapshot()
            with sampler:
                wall = run_threads(threads, args.seconds, body)
            result[f"{name}_cpu_s"] = CpuMeter.delta(c0, meter.snapshot())
            result[f"{name}_pg_connections_most"] = sampler.most()
            return wall

        timed = Timed()
        wall = phase("queries", args.query_threads, query_loop(readers, timed))
        result["queries"] = timed.summary(wall)

        sql_writers = [so.Writers(d, adapter, tables=t, rows_per_write=1) for t in sql_tables]
        timed = Timed()
        x0, t0 = xacts(d), time.monotonic()
        wall = phase("sql_commits", w, write_loop(sql_writers, "sql-plain", timed))
        result["sql_commits"] = timed.summary(wall)
        time.sleep(STATS_FLUSH_S)
        spent = xacts(d) - x0 - result["pg_xacts_per_s_idle"] * (time.monotonic() - t0)
        result["pg_xacts_per_commit"] = round(spent / max(1, len(timed.calls)), 2)

        rest_writers = [so.Writers(d, adapter, tables=t, rows_per_write=1) for t in rest_tables]
        timed = Timed()
        wall = phase("rest_commits", w, write_loop(rest_writers, "rest", timed))
        result["rest_commits"] = timed.summary(wall)

        if instances >= 2:
            result["one_table"] = contended(d, args, adapter, meter)
            result["feed_delivery"] = feed_latency(d)
            result["kill"] = kill_phase(d, args, adapter, sql_tables, meter)

        for table, key in (("skade_commit_log", "commit_seq"), ("skade_idempotency_keys", "idempotency_key")):
            result[table] = growth(d, table, key)
    finally:
        d.stop(check=False)
    return result


def growth(d: so.Deployment, table: str, key: str, rows: int = 100_000) -> dict:
    """Bytes per row of `table` (heap, TOAST and indexes) as it is now, and at `rows` rows: a
    scratch copy of its definition filled with its own rows over and over, each with a new key."""
    (row,) = d.pg(f"SELECT count(*), pg_total_relation_size('{table}'), avg(pg_column_size(t.*)) FROM {table} t")
    n, total, width = int(row[0]), int(row[1]), float(row[2] or 0)
    out = {"rows": n, "total_bytes": total, "avg_tuple_bytes": round(width)}
    if not n:
        return out
    scratch = f"scaleout_growth_{table}"
    columns = [c[0] for c in d.pg(f"SELECT column_name FROM information_schema.columns WHERE table_name = "
                                  f"'{table}' ORDER BY ordinal_position")]
    fresh = "g" if key == "commit_seq" else "g::text || '-' || e.idempotency_key"
    select = ", ".join(fresh if c == key else f"e.{c}" for c in columns)
    d.pg(f"CREATE TABLE {scratch} (LIKE {table} INCLUDING ALL)")
    try:
        d.pg(f"INSERT INTO {scratch} SELECT {select} FROM generate_series(1, {rows}) g "
             f"JOIN (SELECT row_number() OVER () - 1 AS i, * FROM {table}) e ON e.i = g % {n}")
        d.pg(f"VACUUM ANALYZE {scratch}")
        (big,) = d.pg(f"SELECT pg_total_relation_size('{scratch}'), pg_relation_size('{scratch}'), "
                      f"pg_indexes_size('{scratch}')")
        out[f"at_{rows}_rows"] = {"bytes_per_row": round(int(big[0]) / rows), "heap_per_row": round(int(big[1]) / rows),
                                  "indexes_per_row": round(int(big[2]) / rows)}
    finally:
        d.pg(f"DROP TABLE {scratch}")
    return out


def contended(d: so.Deployment, args, adapter, meter: CpuMeter) -> dict:
    """--writer-threads Flight SQL INSERT threads and one PyIceberg appender on one table: the
    servers' commits to it meet only in the catalog's compare-and-swap."""
    so.create_write_tables(d, {"t": "lb.shared"})
    tables = {"sql-plain": "lb.shared", "rest": "lb.shared"}
    sql_writers = [so.Writers(d, adapter, tables=tables, rows_per_write=1) for _ in range(args.writer_threads)]
    rest_writer = so.Writers(d, adapter, tables=tables, rows_per_write=1)
    sql, rest = Timed(), Timed()

    def body(i, stop):
        if i < args.writer_threads:
            write_loop(sql_writers, "sql-plain", sql)(i, stop)
        else:
            write_loop([rest_writer], "rest", rest)(0, stop)

    c0 = meter.snapshot()
    wall = run_threads(args.writer_threads + 1, args.seconds, body)
    return {"cpu_s": CpuMeter.delta(c0, meter.snapshot()), "sql_commits": sql.summary(wall),
            "rest_commits": rest.summary(wall)}


def feed_latency(d: so.Deployment, commits: int = 20) -> dict:
    """Commits made on server 0 (its own Flight SQL port) as seen on the SSE change feed of server
    1 (its own REST port): arrival minus the commit's time in the log."""
    token = so.rest_token(d.servers[1].rest_uri)
    head = max((e["commit_seq"] for e in so.commit_log(d)), default=0)
    arrivals: list[float] = []
    seqs: list[int] = []
    ready = threading.Event()

    def listen():
        request = urllib.request.Request(f"{d.servers[1].rest_uri}/v1/events/stream?after={head}",
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Accept": "text/event-stream"})
        with urllib.request.urlopen(request, timeout=60) as response:
            ready.set()
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    arrivals.append(time.time())
                    seqs.append(json.loads(line[len("data: "):])["commit-seq"])
                    if len(seqs) == commits:
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    ready.wait(30)
    time.sleep(0.3)
    with so.flight_sql(f"grpc://127.0.0.1:{d.servers[0].flight_port}") as conn, conn.cursor() as cur:
        for i in range(commits):
            cur.execute(f"INSERT INTO lb.c0 VALUES ({9_000_000 + i}, 'feed', 1)")
            cur.fetchall()
            time.sleep(0.1)
    listener.join(60)
    committed = {e["commit_seq"]: e["committed_at_us"] / 1e6 for e in so.commit_log(d)}
    lat = [arrival - committed[seq] for arrival, seq in zip(arrivals, seqs)]
    return {"events": len(lat), "p50_ms": ms(percentile(lat, 50)), "p99_ms": ms(percentile(lat, 99)),
            "max_ms": ms(max(lat, default=float("nan")))}


def kill_phase(d: so.Deployment, args, adapter, sql_tables, meter: CpuMeter) -> dict:
    readers = so.Writers(d, adapter)
    writers = [so.Writers(d, adapter, tables=t, rows_per_write=1) for t in sql_tables]
    queries, commits = Timed(), Timed()
    errors: list[str] = []
    writes: list[list[so.Write]] = [[] for _ in writers]  # per writer (and table)
    killed_at: list[float] = []

    def body(i, stop):
        if i == 0:  # the killer
            if not stop.wait(args.seconds / 3):
                killed_at.append(time.time())
                d.kill(1)
            return
        if i <= args.query_threads:
            query_loop(readers, queries, errors)(i - 1, stop)
        else:
            j = i - 1 - args.query_threads
            write_loop(writers, "sql", commits, writes[j], errors)(j, stop)

    c0, started = meter.snapshot(), time.time()
    wall = run_threads(1 + args.query_threads + args.writer_threads, args.seconds, body)
    out: dict = {"cpu_s": CpuMeter.delta(c0, meter.snapshot())}
    k = killed_at[0]
    # Calls by when they started: well before the kill; from 1 s before it (in flight when it
    # came) to 3 s after; and later.
    for name, timed in (("queries", queries), ("sql_commits", commits)):
        out[name] = {"all": timed.summary(wall), "before": timed.summary(k - 1 - started, until=k - 1),
                     "kill_window": timed.summary(4.0, since=k - 1, until=k + 3),
                     "after": timed.summary(started + wall - k - 3, since=k + 3)}
    out["client_errors"] = errors
    # Every acknowledged guarded INSERT is in its table once (each writer's ids are its own only
    # within its table), and the log is dense.
    problems = so.check_log(so.commit_log(d), [], {}, tables={})
    retried = 0
    for mine, tables in zip(writes, sql_tables):
        rows = [r for r in so.table_rows(d, {"sql": tables["sql"]}) if r["kind"] == "sql"]
        found, stats = so.check_writes(mine, rows)
        problems += found
        retried += stats.get("sql retried", 0)
    out["checks"] = {"writes": sum(map(len, writes)), "retried": retried, "problems": problems}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--query-threads", type=int, default=8)
    parser.add_argument("--writer-threads", type=int, default=4)
    parser.add_argument("--instances", default="1,3")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    reason = so.missing_tools()
    if reason:
        print(f"scaleout_bench: {reason}", file=sys.stderr)
        return 2
    os.environ.update(so.pyarrow_s3_environment())
    log_dir = so.shared_root()
    infra = so.Infra()
    results = {"cores": os.cpu_count(), "args": vars(args), "runs": []}
    try:
        for n in (int(x) for x in args.instances.split(",")):
            print(f"== {n} server(s)", file=sys.stderr, flush=True)
            results["runs"].append(measure(infra, n, args, log_dir))
            print(json.dumps(results["runs"][-1], indent=1), file=sys.stderr, flush=True)
    finally:
        infra.stop()
        shutil.rmtree(log_dir, ignore_errors=True)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
