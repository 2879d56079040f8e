"""Runs skade for the Python interop tests: the CLI on a warehouse, and `skade serve` on loopback.

Every server binds port 0 (skade picks free ports and prints them), runs over its own temp
warehouse and is stopped with SIGTERM at the end of its test; a server that died on its own, or
did not exit cleanly, fails the test (a crash is a skade bug, not noise).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]


def skade_binary() -> str:
    path = os.environ.get("SKADE_BIN") or str(REPO / "build" / "src" / "skade")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"skade binary not found at {path} (set SKADE_BIN)")
    return path


class SkadeError(AssertionError):
    pass


def run(warehouse: Path, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """`skade --warehouse W --quiet ARGS…`; raises SkadeError with stderr when it fails."""
    cmd = [skade_binary(), "--warehouse", str(warehouse), "--quiet", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **NO_NETWORK_ENV})
    if check and proc.returncode != 0:
        raise SkadeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}{proc.stdout}")
    return proc


def rows_json(warehouse: Path, *args: str) -> list[dict]:
    """Rows of `skade scan … --format json` or `skade sql … --format json`, numbers as Decimal."""
    out = run(warehouse, *args, "--format", "json").stdout
    return json.loads(out, parse_float=Decimal)


def scan(warehouse: Path, table: str, *args: str) -> list[dict]:
    return rows_json(warehouse, "scan", table, *args)


def sql(warehouse: Path, statement: str) -> list[dict]:
    return rows_json(warehouse, "sql", statement)


# No request of a test may leave this machine: an S3 location (fuzzed, or a typo) goes to a closed
# loopback port, and no AWS profile is read.
NO_NETWORK_ENV = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
    "AWS_ACCESS_KEY_ID": "none",
    "AWS_SECRET_ACCESS_KEY": "none",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}

_LISTEN = re.compile(r"^(flight sql|rest catalog) listening on (?:https?://)?([\d.]+):(\d+)")


class Server:
    """One `skade serve` process; .flight_port and .rest_port once it answers."""

    def __init__(self, warehouse: Path | str, *extra: str, rest: bool = True, env: dict | None = None,
                 log_dir: Path | None = None, flight_port: int = 0, rest_port: int = 0):
        # `warehouse` may be a URI ("s3://bucket/prefix"); then give log_dir. A port other than 0
        # restarts a server where it was (behind a load balancer that names it).
        self.warehouse = warehouse
        self.flight_port: int | None = None
        self.rest_port: int | None = None
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._want_rest = rest
        log_dir = log_dir or warehouse.parent
        self.stderr_path = log_dir / f"serve-{os.getpid()}-{id(self)}.stderr"
        self._stderr = open(self.stderr_path, "w")
        args = [skade_binary(), "--warehouse", str(warehouse), "serve", "--flight-port", str(flight_port)]
        if rest:
            args += ["--rest-port", str(rest_port)]
        args += list(extra)
        self.args = args
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     env={**os.environ, **NO_NETWORK_ENV, **(env or {})})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(60) or self.flight_port is None or (rest and self.rest_port is None):
            self.stop(check=False)
            raise SkadeError(f"skade serve did not start: {' '.join(args)}\n{self.output()}")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            m = _LISTEN.match(line)
            if m:
                if m.group(1) == "flight sql":
                    self.flight_port = int(m.group(3))
                else:
                    self.rest_port = int(m.group(3))
                if self.flight_port and (self.rest_port or not self._want_rest):
                    self._ready.set()
        self._ready.set()  # exited: let the waiter see it

    @property
    def rest_uri(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def output(self) -> str:
        if not self._stderr.closed:  # stop() closes it before it reports a server that died
            self._stderr.flush()
        return "stdout:\n" + "".join(self.lines) + "stderr:\n" + self.stderr_path.read_text(errors="replace")[-4000:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, check: bool = True) -> None:
        """SIGTERM and wait; with check, a server that had died or exits non-zero fails."""
        died_before = self.proc.poll()
        if died_before is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                if check:
                    raise SkadeError(f"skade serve ignored SIGTERM for 30 s\n{self.output()}")
        self._reader.join(5)
        self._stderr.close()
        if check and died_before is not None:
            raise SkadeError(f"skade serve died during the test (exit {died_before})\n{self.output()}")
        if check and self.proc.returncode != 0:
            raise SkadeError(f"skade serve exited {self.proc.returncode} on SIGTERM\n{self.output()}")


def wait_until(predicate, timeout: float = 10, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
