"""Scan planning and count(*) from metadata: skade against PyIceberg and iceberg-rust.

bench/RESULTS.md, section aj (issue 36, item 5). Run it through bench/engines_plan_bench.sh,
which builds the programs, makes the pinned virtualenv and generates the tables.

Every engine opens the same table from its metadata file, once per process, and then runs each
case `--warmup` times untimed and `--repeat` times timed, a fresh planner (and, where an engine
caches manifests, an emptied cache) each run:

    skade         bench/engines_plan_skade: ScanPlanner::PlanFiles (tasks counted, record counts
                  summed) or ScanPlanner::CountFromManifests; threads by set_threads
    PyIceberg     StaticTable.from_metadata(...).scan(row_filter=...).plan_files(), iterated, or
                  .scan().count(); threads by PYICEBERG_MAX_WORKERS (its manifest thread pool)
    iceberg-rust  bench/rust_plan: StaticTable, scan().build().plan_files(), drained; threads
                  are the tokio runtime's worker threads

Each run prints its task count and summed record count; a run whose answer differs from the
expected one (from the generator's closed form, and every engine against skade) stops the
bench. The table is printed as markdown: median and min of the timed runs, µs per manifest
entry of the table, and skade's median over the other's (< 1: skade is faster).

This file is also the PyIceberg worker: `engines_plan_bench.py pyiceberg --metadata ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

# The filters of the plan cases, in each engine's terms. `id` is dense and contiguous per file
# (bench/table_generator.h), so `id < 1000` matches one file and is pruned by column metrics
# only; `ts` is the day-partition source, one day per file here, so `ts < 2020-01-11` is pruned
# by the manifest list's partition summaries first, then by the entries' partition values.
TS_BOUND_MICROS = 1578700800 * 1_000_000  # 2020-01-11T00:00:00Z
FILTERS = {
    "none": {"skade": "", "rust": "none", "pyiceberg": None, "title": "no filter"},
    "id": {
        "skade": "id < 1000",
        "rust": "id_lt:1000",
        "pyiceberg": ("id", 1000),
        "title": "`id < 1000` (metrics)",
    },
    "ts": {
        "skade": "ts < TIMESTAMPTZ '2020-01-11 00:00:00+00'",
        "rust": f"ts_lt_micros:{TS_BOUND_MICROS}",
        "pyiceberg": ("ts", "2020-01-11T00:00:00+00:00"),
        "title": "`ts < 2020-01-11` (partition)",
    },
}
ENGINES = ["skade", "pyiceberg", "rust"]
TITLES = {"skade": "skade", "pyiceberg": "PyIceberg", "rust": "iceberg-rust"}


class WrongAnswer(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The PyIceberg worker (runs in the pinned virtualenv).


def pyiceberg_worker(args: argparse.Namespace) -> None:
    # The executor reads PYICEBERG_MAX_WORKERS when it is first made; the driver sets it.
    from pyiceberg.expressions import AlwaysTrue, LessThan
    from pyiceberg.manifest import clear_manifest_cache
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(args.metadata)
    spec = FILTERS[args.filter]["pyiceberg"]
    row_filter = AlwaysTrue() if spec is None else LessThan(spec[0], spec[1])
    for run in range(args.warmup + args.repeat):
        clear_manifest_cache()  # every run reads the manifest list's manifests again
        start = time.perf_counter()
        scan = table.scan(row_filter=row_filter)
        if args.mode == "count":
            tasks = -1  # count() gives only the rows
            records = scan.count()
        else:
            tasks = 0
            records = 0
            for task in scan.plan_files():
                tasks += 1
                records += task.file.record_count
        seconds = time.perf_counter() - start
        print(json.dumps({"run": run, "warmup": run < args.warmup, "seconds": seconds,
                          "tasks": tasks, "records": records}), flush=True)


# ---------------------------------------------------------------------------------------------
# The driver.


@dataclass
class Table:
    name: str
    folder: str
    metadata: str
    files: int
    rows: int


@dataclass
class Result:
    seconds: list[float]
    tasks: int
    records: int
    load: float

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def expected(table: Table, filter_name: str) -> tuple[int, int]:
    """Tasks and records a correct plan returns (skade_gen_table: rows/files rows a file, ids
    contiguous from 0, file k holding day k from 2020-01-01)."""
    per_file = table.rows // table.files
    if filter_name == "none":
        return table.files, table.rows
    if filter_name == "id":
        n = -(-1000 // per_file)
        return n, n * per_file
    if filter_name == "ts":
        return 10, 10 * per_file
    raise ValueError(filter_name)


def run_engine(args: argparse.Namespace, engine: str, table: Table, mode: str, filter_name: str,
               threads: int) -> Result:
    env = dict(os.environ)
    common = ["--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    if engine == "skade":
        cmd = [args.skade_plan, "--table", table.metadata, "--threads", str(threads), "--mode", mode]
        if FILTERS[filter_name]["skade"]:
            cmd += ["--where", FILTERS[filter_name]["skade"]]
    elif engine == "rust":
        if mode == "count":
            filter_arg = "none"
        else:
            filter_arg = FILTERS[filter_name]["rust"]
        cmd = [args.rust_plan, "--metadata", table.metadata, "--threads", str(threads),
               "--filter", filter_arg]
    else:
        env["PYICEBERG_MAX_WORKERS"] = str(threads)
        cmd = [sys.executable, os.path.abspath(__file__), "pyiceberg", "--metadata", table.metadata,
               "--filter", filter_name, "--mode", mode]
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd + common, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(runs) != args.repeat + args.warmup:
        raise RuntimeError(f"{engine}: {len(runs)} runs reported:\n{proc.stdout}\n{proc.stderr}")
    want_tasks, want_records = expected(table, filter_name)
    for r in runs:
        tasks_ok = r["tasks"] == want_tasks or (engine == "pyiceberg" and mode == "count")
        if not tasks_ok or r["records"] != want_records:
            raise WrongAnswer(f"{engine} on {table.name}, {mode} {filter_name}, {threads} threads: "
                              f"{r['tasks']} tasks, {r['records']} records; want {want_tasks}, "
                              f"{want_records}")
    timed = [r["seconds"] for r in runs if not r["warmup"]]
    return Result(timed, runs[0]["tasks"], runs[0]["records"], load)


def cli_count(args: argparse.Namespace, table: Table) -> Result:
    """`skade scan TABLE --count`, the whole process (metadata parse and start-up included)."""
    seconds = []
    load = os.getloadavg()[0]
    for run in range(args.warmup + args.repeat):
        start = time.perf_counter()
        proc = subprocess.run([args.skade, "scan", table.folder, "--count"], capture_output=True,
                              text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0 or proc.stdout.strip() != str(table.rows):
            raise WrongAnswer(f"skade scan --count on {table.name}: {proc.stdout!r} {proc.stderr!r}")
        if run >= args.warmup:
            seconds.append(elapsed)
    return Result(seconds, table.files, table.rows, load)


def fmt_ms(seconds: float) -> str:
    if seconds < 0.01:
        return f"{seconds * 1000:.3f}"
    return f"{seconds * 1000:.1f}" if seconds < 10 else f"{seconds * 1000:,.0f}"


def ratio(a: Result, b: Result | None) -> str:
    if b is None:
        return "—"
    r = a.median / b.median
    word = "skade ahead" if r < 1 else "skade behind"
    return f"**{r:.3g}** ({word} {max(r, 1 / r):.1f}×)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    worker = sub.add_parser("pyiceberg")
    worker.add_argument("--metadata", required=True)
    worker.add_argument("--filter", default="none", choices=sorted(FILTERS))
    worker.add_argument("--mode", default="plan", choices=["plan", "count"])
    worker.add_argument("--repeat", type=int, default=5)
    worker.add_argument("--warmup", type=int, default=1)
    bench = sub.add_parser("bench")
    bench.add_argument("--table", action="append", required=True,
                       help="NAME=FOLDER:FILES:ROWS (the folder holds metadata/v1.metadata.json)")
    bench.add_argument("--skade-plan", required=True, help="build/bench/engines_plan_skade")
    bench.add_argument("--skade", required=True, help="build/src/skade")
    bench.add_argument("--rust-plan", help="bench/rust_plan's binary; none: iceberg-rust left out")
    bench.add_argument("--threads", default="1,2")
    bench.add_argument("--filters", default="none,id,ts")
    bench.add_argument("--repeat", type=int, default=5)
    bench.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    if args.command == "pyiceberg":
        pyiceberg_worker(args)
        return 0
    if args.command != "bench":
        parser.print_help()
        return 2

    import pyiceberg

    engines = [e for e in ENGINES if e != "rust" or args.rust_plan]
    tables = []
    for spec in args.table:
        name, rest = spec.split("=", 1)
        folder, files, rows = rest.rsplit(":", 2)
        tables.append(Table(name, folder, os.path.join(folder, "metadata", "v1.metadata.json"),
                            int(files), int(rows)))
    threads_list = [int(t) for t in args.threads.split(",")]
    filters = args.filters.split(",")

    print(f"# {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"PyIceberg {pyiceberg.__version__}; load at start {os.getloadavg()}")
    print(f"# median (min) of {args.repeat} timed runs after {args.warmup} warm-up; ratio = "
          "skade's median over the other's; load = 1-minute load average when the line started\n")
    header = ("| table | case | threads | skade ms | PyIceberg ms | iceberg-rust ms | skade µs/entry "
              "| PyIceberg µs/entry | iceberg-rust µs/entry | skade/PyIceberg | skade/iceberg-rust "
              "| tasks, rows | load |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))

    def line(table: Table, title: str, threads: str, results: dict[str, Result | None]) -> None:
        s = results["skade"]
        cells = []
        for e in ENGINES:
            r = results.get(e)
            cells.append("—" if r is None else f"{fmt_ms(r.median)} ({fmt_ms(min(r.seconds))})")
        for e in ENGINES:
            r = results.get(e)
            cells.append("—" if r is None else f"{r.median * 1e6 / table.files:.2f}")
        loads = "/".join(f"{r.load:.1f}" for r in results.values() if r is not None)
        print(f"| {table.name} | {title} | {threads} | " + " | ".join(cells) +
              f" | {ratio(s, results.get('pyiceberg'))} | {ratio(s, results.get('rust'))} "
              f"| {s.tasks:,}, {s.records:,} | {loads} |", flush=True)

    for table in tables:
        for filter_name in filters:
            for threads in threads_list:
                results: dict[str, Result | None] = {}
                for engine in engines:
                    results[engine] = run_engine(args, engine, table, "plan", filter_name, threads)
                line(table, "plan, " + FILTERS[filter_name]["title"], str(threads), results)
        # count(*) from metadata: every engine with 2 threads (the machine's cores).
        results = {}
        for engine in engines:
            results[engine] = run_engine(args, engine, table, "count", "none", 2)
        line(table, "count(*) from metadata", "2", results)
        cli = cli_count(args, table)
        print(f"| {table.name} | `skade scan --count`, whole process | default | {fmt_ms(cli.median)} "
              f"({fmt_ms(min(cli.seconds))}) | | | | | | | | {cli.tasks:,}, {cli.records:,} "
              f"| {cli.load:.1f} |", flush=True)
    print(f"\n# load at end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
