"""A small read's latency, skade against DuckDB handed the files (bench/RESULTS.md, section as).

skade's to_arrow() of `id < 100000` over the python_scan_bench table (one of its ten files
matches), its scan(limit=0) (every step but the rows: catalog, metadata, plan, the query's
prepare), and DuckDB's read_parquet of the table's ten files with the same filter, in rounds
that alternate the three, each call after a gc.collect(): the figures of a process that does
other work between reads. Then the same three calls back to back, as a loop of reads sees them.

    SKADE_LIBRARY=build/src/libskade.so PYTHONPATH=python <venv>/bin/python \\
        bench/python/small_read_latency.py --warehouse /tmp/pyscan-lake [--rounds 60]

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
COLUMNS = ["id", "qty", "amount"]
WHERE = "id < 100000"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    lake = skade.open(args.warehouse)
    files = sorted(glob.glob(os.path.join(args.warehouse, "bench", "scan10m", "data", "**", "*.parquet"),
                           recursive=True))
    con = duckdb.connect()
    source = "read_parquet([" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "])"
    total = lake.sql(f"SELECT count(*) AS n FROM {TABLE}").read_all().column(0)[0].as_py()
    if con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0] != total:
        raise SystemExit("the files under the table's data folder are not its snapshot's")
    query = f"SELECT {', '.join(COLUMNS)} FROM {source} WHERE {WHERE}"
    calls = {
        "skade to_arrow()": lambda: lake.to_arrow(TABLE, where=WHERE, columns=COLUMNS),
        "skade scan(limit=0)": lambda: lake.scan(TABLE, where=WHERE, columns=COLUMNS, limit=0).read_all(),
        "DuckDB read_parquet": lambda: con.sql(query).to_arrow_table(),
    }
    expected = {"skade to_arrow()": 100000, "skade scan(limit=0)": 0, "DuckDB read_parquet": 100000}
    for name, call in calls.items():  # warm-up, checked
        if call().num_rows != expected[name]:
            raise SystemExit(f"{name}: wrong row count")
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
