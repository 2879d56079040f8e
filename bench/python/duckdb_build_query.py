"""One SQL statement timed in whichever DuckDB Python package is imported (bench/duckdb_builds.sh).

    <python> bench/python/duckdb_build_query.py --sql "SELECT …" [--repeat 15]

Prints the package's version and the compiler its extension module says built it, the median and
the best of --repeat runs after one warm-up (fetchall, as the C API side materializes), and the
first row's first value.
"""
import argparse
import statistics
import subprocess
import time

import duckdb


def built_by() -> str:
    """The .comment section of DuckDB's extension module (the compiler that built it)."""
    module = duckdb.__file__
    try:
        import _duckdb  # the extension module beside the package, in recent packages
        module = _duckdb.__file__
    except ImportError:
        pass
    try:
        out = subprocess.run(["readelf", "-p", ".comment", module], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown compiler"
    lines = [line.split("]", 1)[1].strip() for line in out.splitlines() if "]" in line]
    return lines[0] if lines else "unknown compiler"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sql", required=True)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    con = duckdb.connect()
    first = con.execute(args.sql).fetchall()
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        con.execute(args.sql).fetchall()
        times.append((time.perf_counter() - start) * 1e3)
    value = first[0][0] if first and first[0] else None
    print(f"DuckDB {duckdb.__version__} (Python package; {built_by()}): median {statistics.median(times):.1f} ms, "
          f"best {min(times):.1f} ms; first value {value}")


if __name__ == "__main__":
    main()
