"""skade as the JVM engine suites (spark/, trino/) drive it: `skade serve` on loopback over one
warehouse, the CLI on that warehouse, and the multiset row comparison every check ends in.

A suite's helpers.py puts this folder on sys.path (it is not a package of its own).
"""

import collections
import decimal
import json
import os
import re
import subprocess
import threading
import urllib.request

SERVER_START_TIMEOUT_S = 30


class Server:
    """`skade serve` over a warehouse, REST catalog and Flight SQL on ports it picks itself."""

    def __init__(self, binary, warehouse, log_path, lake_args=(), serve_args=(), env=None):
        """lake_args go before `serve` (e.g. --catalog), serve_args after it; env adds to this
        process's environment."""
        self.log_path = log_path
        self._log = open(log_path, "w")
        # Port 0: the server binds a free port and prints it, so parallel runs never collide.
        self.proc = subprocess.Popen(
            [binary, "--warehouse", warehouse, *lake_args, "--log-level", "info", "serve", "--host", "127.0.0.1",
             "--flight-port", "0", "--rest-port", "0", *serve_args],
            stdout=subprocess.PIPE, stderr=self._log, text=True, env=dict(os.environ, TZ="UTC", **(env or {})))
        self.rest_uri = None
        found = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self._log.write(line)
                self._log.flush()
                m = re.search(r"rest catalog listening on (http://\S+)", line)
                if m:
                    self.rest_uri = m.group(1)
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(SERVER_START_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"skade serve did not start; log:\n{open(log_path).read()[-3000:]}")
        with urllib.request.urlopen(self.rest_uri + "/v1/config", timeout=10) as r:
            assert r.status == 200

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        # A crash (not our SIGTERM) is a skade bug.
        assert self.proc.returncode in (0, -15), f"skade serve exited {self.proc.returncode}"


class SkadeCli:
    """The skade binary run on the suite's lake (while `skade serve` serves it)."""

    def __init__(self, binary, warehouse):
        self.binary = binary
        self.warehouse = warehouse

    def run(self, *args, check=True, timeout=120):
        cmd = [self.binary, "--warehouse", self.warehouse, "--quiet", *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, TZ="UTC"))
        if check and p.returncode != 0:
            raise AssertionError(
                f"skade {' '.join(args)} exited {p.returncode}\nstdout: {p.stdout[-3000:]}\n"
                f"stderr: {p.stderr[-3000:]}")
        return p

    def json(self, *args):
        return json.loads(self.run(*args).stdout, parse_float=decimal.Decimal)

    def scan(self, table, columns, *extra):
        """Rows of `skade scan --format json` as tuples in the order of `columns`."""
        objs = self.json("scan", table, "--columns", ",".join(columns), "--format", "json", *extra)
        return [tuple(o[c] for c in columns) for o in objs]

    def sql(self, query, columns):
        objs = self.json("sql", query, "--format", "json")
        return [tuple(o[c] for c in columns) for o in objs]

    def log(self, table=None):
        entries = self.json("log", "--json", "--limit", "1000000")
        return [e for e in entries if table is None or e["table"] == table]


def assert_same_rows(actual, expected, what):
    """Equal as multisets; on a difference, shows what is missing and what is extra."""
    a, e = collections.Counter(actual), collections.Counter(expected)
    if a == e:
        return
    missing = list((e - a).elements())
    extra = list((a - e).elements())
    raise AssertionError(
        f"{what}: {len(actual)} rows, expected {len(expected)}; "
        f"{len(missing)} missing (first: {sorted(missing, key=repr)[:5]}), "
        f"{len(extra)} extra (first: {sorted(extra, key=repr)[:5]})")
