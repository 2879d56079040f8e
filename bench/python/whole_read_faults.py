"""Wall time, CPU and minor page faults of each of several whole reads (Lake.to_arrow) of one
table in one process (bench/RESULTS.md, section aq). Between reads the table read last is
dropped, and with --churn MB another allocation of that size is touched and freed, as another
engine's read would in python_scan_bench.

  SKADE_LIBRARY=build/src/libskade.so PYTHONPATH=python python bench/python/whole_read_faults.py \
      --warehouse /tmp/pyscan-lake --table bench.scan10m [--reads 8] [--churn 700]
"""
import argparse
import resource
import time

import skade


def usage() -> tuple[float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--reads", type=int, default=8)
    parser.add_argument("--churn", type=int, default=0, help="MB allocated, touched and freed between reads")
    args = parser.parse_args()
    lake = skade.open(args.warehouse)
    for i in range(args.reads):
        start = time.perf_counter()
        cpu, faults = usage()
        table = lake.to_arrow(args.table)
        wall = time.perf_counter() - start
        cpu_after, faults_after = usage()
        print(f"read {i + 1}: {wall:.3f} s, CPU {cpu_after - cpu:.3f} s, {faults_after - faults:,} minor faults, "
              f"{table.num_rows:,} rows")
        del table
        if args.churn:
            other = bytearray(args.churn << 20)
            other[::4096] = b"\x01" * len(range(0, len(other), 4096))
            del other


if __name__ == "__main__":
    main()
