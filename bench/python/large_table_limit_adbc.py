"""`LIMIT 10` on a table of 100,000 data files through a real Flight SQL client (issue 36, item 2;
bench/RESULTS.md, sections ai and au). A `skade serve` process on the lake; the ADBC Flight SQL
driver runs each query `--repeat` + 1 times on one connection and prints the first run (the
server's first read of the table: catalog, metadata, the first manifests) and the median of the
others, then the server's resident memory.

    build/bench/skade_gen_table --out /tmp/l100k/gen --rows 1000000 --files 100000 \\
        --manifests 1000 --columns 4 --threads 1
    build/src/skade --warehouse /tmp/l100k/lake ns create b
    build/src/skade --warehouse /tmp/l100k/lake register b.t /tmp/l100k/gen/metadata/v1.metadata.json
    SKADE_BIN=build/src/skade "$(scripts/interop_env.sh python venv)/bin/python" \\
        bench/python/large_table_limit_adbc.py --warehouse /tmp/l100k/lake --allow-dir /tmp/l100k/gen

The interop virtualenv has the pinned driver (scripts/setup_interop.sh). Every query must return
10 rows of the table's 4 columns.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import adbc_driver_flightsql.dbapi as flight_sql

import skade_serve

QUERIES = ["SELECT * FROM b.t LIMIT 10", "SELECT * FROM b.t WHERE id > 500000 LIMIT 10"]


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--allow-dir", required=True, help="the folder of the table's files (registered outside the lake)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with skade_serve.running(args.warehouse, ["--auth", "none", "--allow-dir", args.allow_dir]) as (server, port):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the driver's note that autocommit cannot be turned off
            conn = flight_sql.connect(f"grpc://127.0.0.1:{port}")
        for sql in QUERIES:
            times = []
            for _ in range(args.repeat + 1):
                cur = conn.cursor()
                start = time.perf_counter()
                cur.execute(sql)
                table = cur.fetch_arrow_table()
                times.append((time.perf_counter() - start) * 1e3)
                cur.close()
                if table.num_rows != 10 or table.num_columns != 4:
                    print(f"{sql}: {table.num_rows} rows, {table.num_columns} columns", file=sys.stderr)
                    return 1
            rest = times[1:]
            print(f"{sql}: first {times[0]:.1f} ms; then median {statistics.median(rest):.1f} ms "
                  f"(min {min(rest):.1f}, max {max(rest):.1f})")
        print(f"server resident memory {resident_mib(server.pid):.0f} MiB")
        conn.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
