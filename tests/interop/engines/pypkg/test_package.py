"""The built wheel: installed outside the build tree, it loads its own copy of the library."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]

SCRIPT = """
import pyarrow as pa, skade, sys
with skade.open(warehouse=sys.argv[1]) as lake:
    lake.create_namespace("db")
    lake.create_table("db.t", pa.schema([("id", pa.int64())]))
    lake.append("db.t", pa.table({"id": [1, 2, 3]}))
    assert lake.to_arrow("db.t").column("id").to_pylist() == [1, 2, 3]
maps = open("/proc/self/maps").read()
print(skade.__file__)
print("libskade" if sys.argv[2] + "/skade/libskade.so" in maps else "no libskade")
print("libduckdb" if sys.argv[2] + "/skade/libduckdb.so" in maps else "no libduckdb")
"""


def test_wheel_installs_and_loads_outside_the_build_tree(tmp_path):
    env = dict(os.environ, SKADE_LIBRARY_FILE=os.environ["SKADE_LIBRARY"], PYTHON=sys.executable)
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_python.sh"), str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=240,
    )
    assert built.returncode == 0, built.stderr
    wheels = list((tmp_path / "out" / "dist").glob("skade-*.whl"))
    assert len(wheels) == 1 and wheels[0].name.endswith("-linux_x86_64.whl")
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(target),
         str(wheels[0])],
        capture_output=True, text=True, timeout=240,
    )
    assert installed.returncode == 0, installed.stderr
    # No SKADE_LIBRARY, no source tree on the path, run from elsewhere.
    clean = {k: v for k, v in os.environ.items() if k not in ("SKADE_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    clean["PYTHONPATH"] = str(target)
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "lake"), str(target)],
        env=clean, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.split()
    assert lines[0] == str(target / "skade" / "__init__.py")
    assert lines[1:] == ["libskade", "libduckdb"]
