# Sourced by the Python benchmarks (bench/python_scan_bench.sh, bench/engines_plan_bench.sh):
# bench_python_venv NAME prints the path of the virtualenv holding bench/python/requirements.txt
# (every package pinned by hash), $SKADE_CACHE/venv/bench-python-<hash of the file>, made once
# with $SKADE_PYTHON (default python3) as scripts/setup_interop.sh makes the test suites' ones.
# NAME prefixes its progress message (on stderr).
bench_python_venv() {
  local name="$1"
  local here cache python req venv
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  cache="${SKADE_CACHE:-$HOME/.cache/skade}"
  python="${SKADE_PYTHON:-python3}"
  req="$here/requirements.txt"
  venv="$cache/venv/bench-python-$(sha256sum "$req" | cut -c1-16)"
  if [ ! -f "$venv/.complete" ]; then
    echo "$name: installing $(grep -cE '^[A-Za-z0-9]' "$req") pinned Python packages into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$cache/venv" "$cache/pip"
    "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      --cache-dir "$cache/pip" --require-hashes --no-deps -r "$req" >&2
    touch "$venv/.complete"
  fi
  printf '%s\n' "$venv"
}
