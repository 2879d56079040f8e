"""`skade serve` for the Python benchmarks that need a Flight SQL server of their own process:
started on a free port (`--flight-port 0`), the port read from its first lines, stopped on exit.

    with skade_serve.running(warehouse, ["--auth", "none"]) as (server, port):
        ...  # server is the subprocess.Popen, port the Flight SQL port

The binary is $SKADE_BIN (default build/src/skade). Raises RuntimeError when the server ends
before it says where it listens.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def running(warehouse: Path | str, extra: list[str] | None = None) -> Iterator[tuple[subprocess.Popen, int]]:
    skade = os.environ.get("SKADE_BIN", "build/src/skade")
    server = subprocess.Popen([skade, "--warehouse", str(warehouse), "serve", "--flight-port", "0", *(extra or [])],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in server.stdout:
            m = re.match(r"flight sql listening on [^ ]*:(\d+) ", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise RuntimeError("skade serve did not start")
        yield server, port
    finally:
        server.terminate()
        server.wait(30)
