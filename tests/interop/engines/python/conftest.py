"""Fixtures of the Python interop suite (PyIceberg, ADBC, schemathesis against `skade serve`).

With SKADE_PY_BALANCED=1 (the ctest case engines_python_balanced) every `serve(...)` starts three
servers sharing a key behind nginx (scaleout.BalancedServers) and hands out the balancer's ports,
so the same tests run with each call free to land on any server; tests marked
`single_server(reason)` are skipped then.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import skade_harness

BALANCED = os.environ.get("SKADE_PY_BALANCED") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "single_server(reason): needs one server process, not several behind a "
                                       "balancer (skipped with SKADE_PY_BALANCED=1)")


def pytest_collection_modifyitems(config, items):
    if not BALANCED:
        return
    for item in items:
        marker = item.get_closest_marker("single_server")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason="behind a balancer: " + (marker.args[0] if marker.args else "")))


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
        if BALANCED:
            import scaleout

            reason = scaleout.missing_tools()
            if reason:
                pytest.skip(reason)
            server = scaleout.BalancedServers(warehouse, *extra, rest=rest, env=env, log_dir=tmp_path)
        else:
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
