"""Fixtures of the Python interop suite (PyIceberg, ADBC, schemathesis against `skade serve`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import skade_harness


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A fresh, empty warehouse folder (skade makes the lake on first use)."""
    path = tmp_path / "lake"
    path.mkdir()
    return path


@pytest.fixture
def serve(tmp_path: Path):
    """start(warehouse, *extra_args, rest=True) -> skade_harness.Server; all stopped at the end,
    and a server that crashed or did not stop cleanly fails the test."""
    servers: list[skade_harness.Server] = []

    def start(warehouse: Path, *extra: str, rest: bool = True, env: dict | None = None) -> skade_harness.Server:
        server = skade_harness.Server(warehouse, *extra, rest=rest, env=env, log_dir=tmp_path)
        servers.append(server)
        return server

    yield start
    errors = []
    for server in servers:
        try:
            server.stop()
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)
