"""Fixtures of the skade Python package suite: a new lake per test in its own temp dir."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

import skade


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def lake(warehouse: Path) -> Iterator[skade.Lake]:
    with skade.open(warehouse=str(warehouse)) as opened:
        opened.create_namespace("db")
        yield opened


@pytest.fixture
def skade_bin() -> str:
    path = os.environ.get("SKADE_BIN", "")
    if not path or not Path(path).is_file():
        pytest.fail("SKADE_BIN must name the skade binary")
    return path


def run_cli(skade_bin: str, warehouse: Path, *args: str) -> str:
    """Runs the skade CLI on the lake; fails the test with its output when it fails."""
    done = subprocess.run(
        [skade_bin, "--warehouse", str(warehouse), *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"skade {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout
