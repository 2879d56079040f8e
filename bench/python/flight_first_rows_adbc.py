"""First rows through a real Flight SQL client (issue 36, item 2): the ADBC Flight SQL driver
fetches the 1M-row, 4-column result of flightsql_bench's first-rows query from a `skade serve`
process, so that client and server are separate processes as they are for users. Prints the
time to the first batch and to the last, and the CPU each process spent per query.

    SKADE_BIN=build/src/skade "$(scripts/interop_env.sh python venv)/bin/python" \
        bench/python/flight_first_rows_adbc.py --warehouse /tmp/fsb-lake [--repeat 15]

The warehouse is the lake flightsql_bench made (`--dir`); the interop virtualenv has the pinned
driver (scripts/setup_interop.sh). Every fetch must return 1,000,000 rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import adbc_driver_flightsql.dbapi as flight_sql

import skade_serve

SQL = 'SELECT id, qty, price, amount FROM skade."ns".t WHERE id < 1000000'
ROWS = 1_000_000


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process `pid` so far (/proc/PID/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with skade_serve.running(args.warehouse) as (server, port):
        conn = flight_sql.connect(f"grpc://127.0.0.1:{port}")
        first, whole, server_cpu, client_cpu = [], [], [], []
        for i in range(args.repeat + 2):  # two warm-up fetches
            s0, c0 = cpu_seconds(server.pid), time.process_time()
            cur = conn.cursor()
            t0 = time.perf_counter()
            cur.execute(SQL)
            reader = cur.fetch_record_batch()
            rows, at_first = 0, None
            for batch in reader:
                if at_first is None:
                    at_first = time.perf_counter() - t0
                rows += batch.num_rows
            t = time.perf_counter() - t0
            cur.close()
            if rows != ROWS:
                print(f"the fetch returned {rows} rows, expected {ROWS}", file=sys.stderr)
                return 1
            if i >= 2:
                first.append(at_first * 1e3)
                whole.append(t * 1e3)
                server_cpu.append((cpu_seconds(server.pid) - s0) * 1e3)
                client_cpu.append((time.process_time() - c0) * 1e3)
        conn.close()
        med = statistics.median
        print(f"ADBC Flight SQL client, {args.repeat} fetches (load {os.getloadavg()[0]:.2f}): first batch median "
              f"{med(first):.1f} ms (best {min(first):.1f}), whole result median {med(whole):.1f} ms "
              f"(best {min(whole):.1f}); CPU per fetch: server median {med(server_cpu):.0f} ms, client median "
              f"{med(client_cpu):.0f} ms")
        return 0


if __name__ == "__main__":
    sys.exit(main())
