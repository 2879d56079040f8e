"""Scans of one Iceberg table into pyarrow: skade's Python package against PyIceberg and DuckDB.

bench/RESULTS.md, section y (issues 36 item 5 and 39). One run, one process, one table:

- the table: `skade_gen_table` (bench/table_generator.h: 10 columns, contiguous id ranges per
  file) writes it into DIR/bench/scan10m, and `skade register` puts it in the lake's SQLite
  catalog DIR/catalog.db as bench.scan10m, which PyIceberg's SqlCatalog opens as it is;
- the engines, each timed from a ready handle to a pyarrow.Table in hand:
    skade      skade.open(DIR).to_arrow(table, where=, columns=): the whole read
               (skade_read_all: DuckDB converts in its worker threads, batches of up to 122,880 rows)
    skade scan skade.open(DIR).scan(table, where=, columns=).read_all(): the stream, 2048-row
               chunks converted as they are read
               (for both: catalog lookup, metadata, planning and the read are inside the timed
               call)
    PyIceberg  catalog.load_table(...).scan(row_filter=, selected_fields=).to_arrow()
    DuckDB     con.sql("SELECT … FROM read_parquet([the current data files]) WHERE …")
               .to_arrow_table() — the file list is given (from PyIceberg's plan), no metadata
- the cases: a full scan of every column, two selective scans keeping ~1% of the rows on three
  columns (one a file-pruning predicate on id, one on a hash-like column every file holds), and
  count(*);
- every result is checked (row count, column names, sums of columns; against closed forms where
  there are some, and the three engines against each other): a wrong answer stops the run.

Each engine runs each case once as a warm-up (page cache warm) and then `--repeat` times, the
engines' order rotating between repetitions; the table shows the median and the minimum wall
time, the median CPU time of the process (all threads), and skade's time over the others'.

Run it through bench/python_scan_bench.sh, which makes the pinned virtualenv and skade's wheel.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyiceberg
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, LessThan

import skade

NAMESPACE = "bench"
TABLE_NAME = "scan10m"
TABLE = f"{NAMESPACE}.{TABLE_NAME}"
COLUMNS = ["id", "qty", "price", "amount", "customer", "event_date", "ts", "flag", "score", "big"]
# big = (i * 2654435761) % 1000000007 (bench/table_generator.cc): spread evenly over every file,
# so no file's bounds exclude it; values below 10^7 are ~1% of the rows.
BIG_BOUND = 10_000_000
ENGINES = ["skade", "skade_scan", "pyiceberg", "duckdb"]
ENGINE_TITLES = {"skade": "skade", "skade_scan": "skade scan", "pyiceberg": "PyIceberg", "duckdb": "DuckDB"}


class WrongAnswer(Exception):
    """An engine returned another result than the others or than the closed form."""


@dataclass
class Case:
    name: str
    title: str
    columns: list[str] | None  # None: every column
    where_sql: str | None  # skade's where= and DuckDB's WHERE
    row_filter: BooleanExpression  # PyIceberg's
    count_only: bool = False


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def cpu_seconds() -> float:
    """CPU time of this process, every thread (skade's and DuckDB's workers, pyarrow's pool)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str]) -> str:
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_table(args: argparse.Namespace) -> None:
    """Generates the table into DIR/bench/scan10m and registers it in DIR/catalog.db."""
    location = os.path.join(args.dir, NAMESPACE, TABLE_NAME)
    start = time.perf_counter()
    print(run([args.gen_table, "--out", location, "--rows", str(args.rows), "--files", str(args.files),
               "--manifests", "2"]))
    run([args.skade, "--warehouse", args.dir, "--quiet", "ns", "create", NAMESPACE])
    run([args.skade, "--warehouse", args.dir, "--quiet", "register", TABLE, location])
    print(f"registered {TABLE} in {args.dir}/catalog.db ({time.perf_counter() - start:.1f} s)")


def open_pyiceberg_catalog(warehouse: str) -> SqlCatalog:
    """PyIceberg's SqlCatalog on the lake's own catalog.db (skade's catalog name is "skade")."""
    db = os.path.join(warehouse, "catalog.db")
    with sqlite3.connect(db) as c:
        names = {r[0] for r in c.execute("SELECT DISTINCT catalog_name FROM iceberg_tables")}
    if names != {"skade"}:
        raise SystemExit(f"python_scan_bench: {db} holds catalogs {sorted(names)}, expected ['skade']")
    return SqlCatalog("skade", uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")


def data_files(catalog: SqlCatalog) -> list[str]:
    """The current snapshot's data files, from PyIceberg's plan (no delete files expected)."""
    tasks = list(catalog.load_table((NAMESPACE, TABLE_NAME)).scan().plan_files())
    for task in tasks:
        if task.delete_files:
            raise SystemExit(f"python_scan_bench: {task.file.file_path} has delete files; DuckDB would not apply them")
    return [t.file.file_path.removeprefix("file://") for t in tasks]


def sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def make_cases(rows: int) -> list[Case]:
    id_bound = max(1, rows // 100)
    return [
        Case("full", "full scan, 10 columns", None, None, AlwaysTrue()),
        Case("id", f"id < {id_bound:,} (1%, 3 cols; prunes files)", ["id", "qty", "amount"], f"id < {id_bound}",
             LessThan("id", id_bound)),
        Case("big", f"big < {BIG_BOUND:,} (~1%, 3 cols; every file)", ["id", "qty", "big"], f"big < {BIG_BOUND}",
             LessThan("big", BIG_BOUND)),
        Case("count", "count(*)", None, None, AlwaysTrue(), count_only=True),
    ]


def engine_calls(lake: skade.Lake, catalog: SqlCatalog, con: duckdb.DuckDBPyConnection, files: list[str],
                 case: Case) -> dict[str, Callable[[], Any]]:
    """One zero-argument call per engine that returns the case's answer (a pyarrow.Table, or the
    count)."""
    ident = (NAMESPACE, TABLE_NAME)
    source = f"read_parquet({sql_list(files)})"
    if case.count_only:
        count = lambda: lake.sql(f"SELECT count(*) AS n FROM {TABLE}").read_all().column(0)[0].as_py()  # noqa: E731
        return {
            "skade": count,
            "skade_scan": count,
            "pyiceberg": lambda: catalog.load_table(ident).scan().count(),
            "duckdb": lambda: con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0],
        }
    select = ", ".join(case.columns) if case.columns else "*"
    query = f"SELECT {select} FROM {source}" + (f" WHERE {case.where_sql}" if case.where_sql else "")
    fields = tuple(case.columns) if case.columns else ("*",)
    return {
        "skade": lambda: lake.to_arrow(TABLE, where=case.where_sql, columns=case.columns),
        "skade_scan": lambda: lake.scan(TABLE, where=case.where_sql, columns=case.columns).read_all(),
        "pyiceberg": lambda: catalog.load_table(ident).scan(row_filter=case.row_filter,
                                                            selected_fields=fields).to_arrow(),
        "duckdb": lambda: con.sql(query).to_arrow_table(),
    }


def column_sum(table: pa.Table, name: str) -> Any:
    return pc.sum(table.column(name)).as_py()


def fingerprint(case: Case, answer: Any) -> tuple:
    """What must agree between engines: the count, or the rows, names, column sums and null
    counts."""
    if case.count_only:
        return (int(answer),)
    names = tuple(answer.column_names)
    sums = tuple(column_sum(answer, n) for n in (case.columns or ["id", "qty", "amount", "big"]))
    nulls = tuple(answer.column(n).null_count for n in names)
    return (answer.num_rows, names) + sums + (nulls,)


def expected(case: Case, rows: int) -> dict[int, Any]:
    """Closed forms of some fingerprint fields (index → value), from the generator's columns."""
    if case.count_only:
        return {0: rows}
    if case.name == "full":
        # customer is NULL where i % 13 = 0, score where i % 11 = 5; the others never.
        nulls = {"customer": (rows + 12) // 13, "score": (rows + 5) // 11}
        return {0: rows, 1: tuple(COLUMNS), 2: rows * (rows - 1) // 2, 6: tuple(nulls.get(c, 0) for c in COLUMNS)}
    if case.name == "id":
        n = max(1, rows // 100)
        amount = sum(((i * 37) % 100_000_000) for i in range(n))
        return {0: n, 1: ("id", "qty", "amount"), 2: n * (n - 1) // 2, 3: sum(i % 1000 for i in range(n)),
                4: Decimal(amount).scaleb(-2)}
    return {1: ("id", "qty", "big")}


def check(case: Case, engine: str, answer: Any, agreed: dict[str, tuple], closed: dict[int, Any]) -> None:
    got = fingerprint(case, answer)
    for index, want in closed.items():
        if got[index] != want:
            raise WrongAnswer(f"{case.name}: {engine} returned {got[index]!r} at field {index}, expected {want!r}")
    if case.name == "big" and answer.num_rows:
        top = pc.max(answer.column("big")).as_py()
        if top is None or top >= BIG_BOUND:
            raise WrongAnswer(f"{case.name}: {engine} returned big = {top} (not < {BIG_BOUND})")
    if agreed:
        first, want = next(iter(agreed.items()))
        if got != want:
            raise WrongAnswer(f"{case.name}: {engine} returned {got}, {first} returned {want}")
    agreed[engine] = got


def timed(call: Callable[[], Any]) -> tuple[Any, float, float]:
    gc.collect()
    cpu = cpu_seconds()
    start = time.perf_counter()
    answer = call()
    wall = time.perf_counter() - start
    return answer, wall, cpu_seconds() - cpu


def diagnose(lake: skade.Lake, catalog: SqlCatalog, con: duckdb.DuckDBPyConnection, files: list[str], case: Case,
             rows_out: int, repeat: int) -> list[tuple[str, float, float, int | None]]:
    """Where skade's time goes, as (what, median wall, median CPU, batches) over `repeat` runs:
    skade's fixed cost (a scan of no rows); its scan() call (up to the first batch) apart from
    draining its stream; the DuckDB engine's query run by skade's own (embedded) DuckDB through
    skade's Arrow stream, without any Iceberg work; DuckDB's Python package streaming that query
    in batches of at most 2048 rows, as skade's stream does; PyIceberg's load_table + plan_files."""
    select = ", ".join(case.columns) if case.columns else "*"
    query = (f"SELECT {select} FROM read_parquet({sql_list(files)})"
             + (f" WHERE {case.where_sql}" if case.where_sql else ""))
    ident = (NAMESPACE, TABLE_NAME)
    samples: dict[str, Timing] = {}
    batches: dict[str, int | None] = {}

    def note(what: str, wall: float, cpu: float, table: pa.Table | None = None) -> None:
        samples.setdefault(what, Timing())
        samples[what].wall.append(wall)
        samples[what].cpu.append(cpu)
        batches[what] = None
        if table is not None:
            if table.num_rows != rows_out:
                raise WrongAnswer(f"{case.name}: {what} returned {table.num_rows} rows, not {rows_out}")
            batches[what] = table.column(0).num_chunks

    empty_what = "skade scan(limit=0).read_all(): catalog + metadata + plan + query, no rows"
    open_what = "skade scan() call: as above, then the query runs to its first batch"
    drain_what = "skade read_all() of that stream"
    sql_what = "skade.sql(the DuckDB engine's query): skade's DuckDB + stream, no Iceberg"
    reader_what = "DuckDB (Python) .to_arrow_reader(2048).read_all(): a streamed query"
    plan_what = "PyIceberg load_table + plan_files"
    for _ in range(repeat):
        _, wall, cpu = timed(lambda: lake.scan(TABLE, where=case.where_sql, columns=case.columns, limit=0).read_all())
        note(empty_what, wall, cpu)
        gc.collect()
        cpu, start = cpu_seconds(), time.perf_counter()
        reader = lake.scan(TABLE, where=case.where_sql, columns=case.columns)
        cpu_mid, mid = cpu_seconds(), time.perf_counter()
        table = reader.read_all()
        note(open_what, mid - start, cpu_mid - cpu)
        note(drain_what, time.perf_counter() - mid, cpu_seconds() - cpu_mid, table)
        del table, reader
        table, wall, cpu = timed(lambda: lake.sql(query).read_all())
        note(sql_what, wall, cpu, table)
        del table
        table, wall, cpu = timed(lambda: con.sql(query).to_arrow_reader(2048).read_all())
        note(reader_what, wall, cpu, table)
        del table
        _, wall, cpu = timed(lambda: list(catalog.load_table(ident).scan(row_filter=case.row_filter).plan_files()))
        note(plan_what, wall, cpu)
    return [(what, statistics.median(t.wall), statistics.median(t.cpu), batches[what]) for what, t in samples.items()]


def versions(lake: skade.Lake) -> str:
    embedded = lake.sql("SELECT version() AS v").read_all().column(0)[0].as_py()
    return (f"Python {platform.python_version()}, pyarrow {pa.__version__}, PyIceberg {pyiceberg.__version__}, "
            f"DuckDB (Python) {duckdb.__version__}, skade {getattr(skade, '__version__', '?')} "
            f"(its DuckDB {embedded})")


def machine() -> str:
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores, {model}, {mem:.0f} GiB RAM"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else "-"


def report(cases: list[Case], results: dict[str, dict[str, Timing]], answers: dict[str, tuple], rows: int,
           extra: dict[str, list[tuple[str, float, float, int | None]]]) -> None:
    print()
    print(f"{'case':44} {'engine':10} {'median s':>9} {'min s':>8} {'cpu s':>7} {'Mrows/s':>8} "
          f"{'skade/this':>10}")
    for case in cases:
        timings = results[case.name]
        base = statistics.median(timings["skade"].wall)
        for engine in ENGINES:
            t = timings[engine]
            med = statistics.median(t.wall)
            line = (f"{case.title if engine == 'skade' else '':44} {ENGINE_TITLES[engine]:10} {med:9.3f} "
                    f"{min(t.wall):8.3f} {statistics.median(t.cpu):7.3f} {rows / med / 1e6:8.1f} ")
            line += f"{'':>10}" if engine == "skade" else f"{ratio(base, med):>10}"
            print(line)
    print("  (Mrows/s: the table's rows over the median wall time; skade/this: skade's median over this "
          "engine's, < 1 = skade faster)")

    print()
    print("| case | rows out | skade s | skade scan s | PyIceberg s | DuckDB s | skade/PyIceberg | skade/DuckDB |")
    print("|---|---|---|---|---|---|---|---|")
    for case in cases:
        t = results[case.name]
        med = {e: statistics.median(t[e].wall) for e in ENGINES}
        low = {e: min(t[e].wall) for e in ENGINES}
        cpu = {e: statistics.median(t[e].cpu) for e in ENGINES}
        out = answers[case.name][0]
        cells = " | ".join(f"{med[e]:.3f} ({low[e]:.3f})" for e in ENGINES)
        ratios = " | ".join(f"**{ratio(med['skade'], med[e])}** (cpu {ratio(cpu['skade'], cpu[e])})"
                            for e in ("pyiceberg", "duckdb"))
        print(f"| {case.title} | {out:,} | {cells} | {ratios} |")
    print("  (median (min) wall seconds; ratios of median wall times, and of median CPU times of the process)")

    if extra:
        print()
        print("where skade's time goes (medians)")
        for case in cases:
            if case.name not in extra:
                continue
            print(f"  {case.title}")
            for what, wall, cpu, n in extra[case.name]:
                print(f"    {what:78} {wall * 1000:9.1f} ms  cpu {cpu * 1000:9.1f} ms"
                      + (f"  {n} batches" if n is not None else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="the lake folder to make (default: a temporary one, removed afterwards)")
    parser.add_argument("--reuse", action="store_true", help="use the table already in --dir")
    parser.add_argument("--gen-table", default="build/bench/skade_gen_table", help="skade_gen_table binary")
    parser.add_argument("--skade", default="build/src/skade", help="skade binary")
    parser.add_argument("--scan-bench", help="scan_bench binary: run it on the same table at the end")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per engine and case")
    parser.add_argument("--cases", default="full,id,big,count", help="comma-separated: full,id,big,count")
    args = parser.parse_args()

    temporary = args.dir is None
    if temporary:
        args.dir = tempfile.mkdtemp(prefix="skade-pybench-")
    args.dir = os.path.abspath(args.dir)
    try:
        return bench(args)
    finally:
        if temporary:
            shutil.rmtree(args.dir, ignore_errors=True)


def bench(args: argparse.Namespace) -> int:
    print(f"== machine: {machine()}; load average {load()}")
    if not args.reuse:
        if os.path.exists(args.dir) and os.listdir(args.dir):
            raise SystemExit(f"python_scan_bench: {args.dir} is not empty (--reuse to scan the table in it)")
        make_table(args)
    lake = skade.open(args.dir)
    catalog = open_pyiceberg_catalog(args.dir)
    con = duckdb.connect()
    files = data_files(catalog)
    print(f"== {versions(lake)}")
    print(f"== {TABLE}: {args.rows:,} rows in {len(files)} data files "
          f"({sum(os.path.getsize(f) for f in files) / 1e6:.0f} MB); DuckDB threads "
          f"{con.sql('SELECT current_setting(' + repr('threads') + ')').fetchall()[0][0]}; "
          f"{args.repeat} timed runs per engine after one warm-up")

    wanted = args.cases.split(",")
    cases = [c for c in make_cases(args.rows) if c.name in wanted]
    results: dict[str, dict[str, Timing]] = {}
    answers: dict[str, tuple] = {}
    for case in cases:
        calls = engine_calls(lake, catalog, con, files, case)
        closed = expected(case, args.rows)
        agreed: dict[str, tuple] = {}
        timings = {e: Timing() for e in ENGINES}
        for engine in ENGINES:  # warm-up, checked
            answer, wall, _ = timed(calls[engine])
            check(case, engine, answer, agreed, closed)
            del answer
            print(f"  {case.title}: warm-up {engine} {wall:.3f} s")
        for r in range(args.repeat):
            order = ENGINES[r % len(ENGINES):] + ENGINES[:r % len(ENGINES)]
            for engine in order:
                answer, wall, cpu = timed(calls[engine])
                check(case, engine, answer, agreed, closed)
                del answer
                timings[engine].wall.append(wall)
                timings[engine].cpu.append(cpu)
        results[case.name] = timings
        answers[case.name] = agreed["skade"]
        print(f"  {case.title}: every engine returned {agreed['skade'][0]:,} "
              f"{'as the count' if case.count_only else 'rows'}, the same sums; "
              + ", ".join(f"{e} {statistics.median(timings[e].wall):.3f} s" for e in ENGINES))

    extra = {c.name: diagnose(lake, catalog, con, files, c, answers[c.name][0], args.repeat)
             for c in cases if not c.count_only}
    report(cases, results, answers, args.rows, extra)
    print(f"== load average at the end {load()}")
    lake.close()

    if args.scan_bench:
        bound = max(1, args.rows // 100)
        print()
        print("== C++ scan_bench on the same table: skade's scan path against read_parquet in the DuckDB it embeds "
              "(both through skade's Arrow stream)")
        sys.stdout.flush()
        subprocess.run([args.scan_bench, "--table", os.path.join(args.dir, NAMESPACE, TABLE_NAME), "--repeat",
                        str(args.repeat), "--where", f"id < {bound}", "--where", f"big < {BIG_BOUND}"], check=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WrongAnswer as e:
        print(f"python_scan_bench: WRONG ANSWER: {e}", file=sys.stderr)
        sys.exit(1)
