"""A small read's latency, skade against DuckDB handed the files (bench/RESULTS.md, section as).

skade's to_arrow() of a filter over the python_scan_bench table (by default `id < 100000`, which
one of its ten files matches), its scan(limit=0) (every step but the rows: catalog, metadata, plan, the query's
prepare), and DuckDB's read_parquet of the table's ten files with the same filter, in rounds
that alternate the three, each call after a gc.collect(): the figures of a process that does
other work between reads. Then the same three calls back to back, as a loop of reads sees them.

    SKADE_LIBRARY=build/src/libskade.so PYTHONPATH=python <venv>/bin/python \\
        bench/python/small_read_latency.py --warehouse /tmp/pyscan-lake [--rounds 60] \\
        [--where "big < 10000000" --columns id,qty,big]

With PYTHONPATH naming a folder with another DuckDB Python package first (pip install --target),
DuckDB's side is that version: section au compares skade with the DuckDB release it embeds.

The venv is python_scan_bench's (bench/python/requirements.txt); the lake is the one
python_scan_bench.sh --dir makes. The table must have one snapshot (as generated): its data
files are then the files under its data folder, which the script checks by counting rows.
"""
import argparse
import gc
import glob
import os
import statistics
import time

import duckdb
import skade

TABLE = "bench.scan10m"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--where", default="id < 100000", help="the filter (skade's where= and DuckDB's WHERE)")
    parser.add_argument("--columns", default="id,qty,amount", help="the columns read, comma-separated")
    args = parser.parse_args()
    columns = args.columns.split(",")
    lake = skade.open(args.warehouse)
    files = sorted(glob.glob(os.path.join(args.warehouse, "bench", "scan10m", "data", "**", "*.parquet"),
                           recursive=True))
    con = duckdb.connect()
    source = "read_parquet([" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "])"
    total = lake.sql(f"SELECT count(*) AS n FROM {TABLE}").read_all().column(0)[0].as_py()
    if con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0] != total:
        raise SystemExit("the files under the table's data folder are not its snapshot's")
    query = f"SELECT {', '.join(columns)} FROM {source} WHERE {args.where}"
    calls = {
        "skade to_arrow()": lambda: lake.to_arrow(TABLE, where=args.where, columns=columns),
        "skade scan(limit=0)": lambda: lake.scan(TABLE, where=args.where, columns=columns, limit=0).read_all(),
        "DuckDB read_parquet": lambda: con.sql(query).to_arrow_table(),
    }
    rows = con.sql(f"SELECT count(*) FROM {source} WHERE {args.where}").fetchall()[0][0]
    expected = {"skade to_arrow()": rows, "skade scan(limit=0)": 0, "DuckDB read_parquet": rows}
    for name, call in calls.items():  # warm-up, checked
        answer = call()
        if answer.num_rows != expected[name] or answer.column_names != columns:
            raise SystemExit(f"{name}: {answer.num_rows} rows of {answer.column_names}, expected {expected[name]} of {columns}")
    print(f"== skade {skade.__version__}, DuckDB (Python) {duckdb.__version__}; {args.where}: {rows:,} rows of {columns}")
    for mode in ("alternating, gc.collect() before each", "back to back"):
        times = {name: [] for name in calls}
        if mode == "back to back":
            for name, call in calls.items():
                for _ in range(args.rounds):
                    start = time.perf_counter()
                    call()
                    times[name].append(time.perf_counter() - start)
        else:
            for _ in range(args.rounds):
                for name, call in calls.items():
                    gc.collect()
                    start = time.perf_counter()
                    call()
                    times[name].append(time.perf_counter() - start)
        print(f"== {mode}, {args.rounds} calls each")
        for name, xs in times.items():
            print(f"  {name:22s} median {statistics.median(xs) * 1e3:6.2f} ms   min {min(xs) * 1e3:6.2f} ms")
        ratio = statistics.median(times["skade to_arrow()"]) / statistics.median(times["DuckDB read_parquet"])
        print(f"  skade to_arrow() / DuckDB: {ratio:.2f}")
    lake.close()


if __name__ == "__main__":
    main()
