"""Runs a single-node Trino (coordinator and worker in one JVM) whose catalog `skade` is the Iceberg
connector over skade's REST catalog, and talks to it over Trino's HTTP statement API with the
standard library only.

The server is the pinned tarball that scripts/setup_interop.sh unpacked (server.txt); it runs on
a Java 25 JDK with C1 only (the suite's queries are small: compiling less starts faster) and,
from the second run on, with an ahead-of-time class cache that the first run trained (JDK 25's
AOT cache; a cache the JVM cannot use is ignored). Trino binds 127.0.0.1 only.
"""

import glob
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

START_TIMEOUT_S = 180
QUERY_TIMEOUT_S = 300
# How long after the start a statement that found no node for its catalog is tried again.
SETTLE_S = 30


class TrinoError(AssertionError):
    """A query Trino failed; .name is Trino's error name (e.g. NOT_SUPPORTED)."""

    def __init__(self, name, message, sql):
        super().__init__(f"Trino failed {sql!r}: {name}: {message}")
        self.name = name
        self.message = message


class Result:
    """Rows of one query: .columns (names), .types (Trino's type text) and .rows (lists)."""

    def __init__(self, columns, types, rows):
        self.columns = columns
        self.types = types
        self.rows = rows


def _free_port():
    # Trino's discovery URI must name its own port before it starts, so the port is picked here:
    # bound and released at once. Another process may take it in between; a start that lost that
    # race fails with a BindException and is retried once with another port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _remove_abandoned(aot_cache):
    """Removes the half-trained caches of runs that were killed (their process is gone)."""
    for part in glob.glob(f"{aot_cache}.*.part"):
        pid = part[len(aot_cache) + 1:-len(".part")]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            os.remove(part)


def _write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Trino:
    """One Trino server over a skade REST catalog; stop() ends it."""

    def __init__(self, home, java, workdir, rest_uri, aot_cache=None):
        self.home = home
        self.java = java
        self.workdir = workdir
        self.rest_uri = rest_uri
        self.aot_cache = aot_cache
        self.proc = None
        self.port = None
        self.start_seconds = None
        self._settled_at = 0.0
        self._aot_training = None
        for attempt in range(2):
            try:
                self._start()
                return
            except RuntimeError:
                self.stop()
                if attempt == 1 or "BindException" not in self.log_tail():
                    raise

    # ---- process ----

    def _configure(self):
        etc = os.path.join(self.workdir, "etc")
        os.makedirs(os.path.join(etc, "catalog"), exist_ok=True)
        os.makedirs(os.path.join(self.workdir, "data"), exist_ok=True)
        _write(os.path.join(etc, "config.properties"), [
            "coordinator=true",
            "node-scheduler.include-coordinator=true",
            f"http-server.http.port={self.port}",
            f"discovery.uri=http://127.0.0.1:{self.port}",
            f"plugin.dir={os.path.join(self.home, 'plugin')}",
            f"catalog.config-dir={os.path.join(etc, 'catalog')}",
            # Small queries in a 1 GiB heap (with Trino's default 30% headroom beside them).
            "query.max-memory=512MB",
            "query.max-memory-per-node=512MB",
        ])
        _write(os.path.join(etc, "catalog", "skade.properties"), [
            "connector.name=iceberg",
            "iceberg.catalog.type=rest",
            f"iceberg.rest-catalog.uri={self.rest_uri}",
            # Trino's own file systems: file:// locations (the tables Trino creates, under the
            # schema locations the suite gives) through the native local one, rooted at /;
            # skade's locations are plain paths, which only the Hadoop file system reads.
            "fs.native-local.enabled=true",
            "local.location=/",
            "fs.hadoop.enabled=true",
            # The maintenance procedures may act on files and snapshots made a moment ago.
            "iceberg.expire-snapshots.min-retention=0s",
            "iceberg.remove-orphan-files.min-retention=0s",
        ])
        return etc

    def _start(self):
        self.port = _free_port()
        etc = self._configure()
        self.log_path = os.path.join(self.workdir, "trino.log")
        jvm = [
            self.java, "-Xmx1G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError",
            "-XX:TieredStopAtLevel=1", "-XX:-OmitStackTraceInFastThrow",
            "-Djdk.attach.allowAttachSelf=true", "-XX:+EnableDynamicAgentLoading",
            "-Dfile.encoding=UTF-8", "-Duser.timezone=UTC",
        ]
        self._aot_training = None
        if self.aot_cache:
            if os.path.exists(self.aot_cache):
                jvm.append(f"-XX:AOTCache={self.aot_cache}")
            else:
                _remove_abandoned(self.aot_cache)
                self._aot_training = f"{self.aot_cache}.{os.getpid()}.part"
                jvm.append(f"-XX:AOTCacheOutput={self._aot_training}")
        jvm += [
            "-Dnode.environment=test", "-Dnode.id=skade-interop",
            f"-Dnode.data-dir={os.path.join(self.workdir, 'data')}",
            "-Dnode.bind-ip=127.0.0.1", "-Dnode.internal-address=127.0.0.1",
            f"-Dconfig={os.path.join(etc, 'config.properties')}",
            "-cp", os.path.join(self.home, "lib", "*"), "io.trino.server.TrinoServer",
        ]
        started = time.monotonic()
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(jvm, stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=self.workdir, env=dict(os.environ, TZ="UTC"))
        deadline = started + START_TIMEOUT_S
        while "SERVER STARTED" not in self._read_log():
            if self.proc.poll() is not None:
                raise RuntimeError(f"Trino exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Trino did not start in {START_TIMEOUT_S} s:\n{self.log_tail()}")
            time.sleep(0.1)
        # The coordinator schedules on itself once it has announced itself to its own discovery
        # service, a moment after SERVER STARTED. The system table is read on the coordinator
        # alone. Which catalogs a node serves comes with a later announcement: see query().
        self._settled_at = deadline
        while True:
            r = self.query("SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'")
            if r.rows and r.rows[0][0] >= 1:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Trino has no active node after {START_TIMEOUT_S} s")
            time.sleep(0.1)
        self.start_seconds = time.monotonic() - started
        self._settled_at = time.monotonic() + SETTLE_S

    def _read_log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def log_tail(self, chars=4000):
        try:
            return self._read_log()[-chars:]
        except OSError:
            return ""

    def rss_kib(self):
        """Resident memory of the Trino JVM now, in KiB (None once it has exited)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
            return int(m.group(1)) if m else None
        except OSError:
            return None

    def stop(self):
        """Ends Trino (SIGTERM, then SIGKILL after 60 s). A JVM that trained the AOT cache
        writes it on a clean exit; it is then moved into place for the next run."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        if self._aot_training:
            if os.path.exists(self._aot_training):
                if self.proc.returncode in (0, 143, -15):
                    os.replace(self._aot_training, self.aot_cache)
                else:
                    os.remove(self._aot_training)
        self.proc = None

    # ---- statement API ----

    def _request(self, url, data=None):
        # Without PARAMETRIC_DATETIME, Trino rounds every time and timestamp it sends to
        # milliseconds (the protocol's legacy form): the suite compares microseconds.
        headers = {"X-Trino-User": "skade-interop", "X-Trino-Catalog": "skade",
                   "X-Trino-Time-Zone": "UTC", "X-Trino-Source": "skade-interop",
                   "X-Trino-Client-Capabilities": "PARAMETRIC_DATETIME"}
        req = urllib.request.Request(url, data=data, headers=headers,
                                     method="POST" if data is not None else "GET")
        for _ in range(100):
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return json.load(r)
            except urllib.error.HTTPError as e:
                # The protocol: 502/503/504 mean "try the same request again".
                if e.code not in (502, 503, 504):
                    raise
                time.sleep(0.05)
        raise AssertionError(f"Trino kept answering {url} with 5xx")

    def query(self, sql):
        """Runs one statement to its end and returns its Result; raises TrinoError."""
        while True:
            try:
                return self._query_once(sql)
            except TrinoError as e:
                # In its first seconds the node is active but not yet listed as serving the
                # catalog `skade`, and a statement that needs the catalog's nodes fails while it
                # is scheduled, before it ran or wrote anything: run it again.
                unscheduled = e.name == "NO_NODES_AVAILABLE" or "nodes is empty" in e.message
                if not unscheduled or time.monotonic() > self._settled_at:
                    raise
                time.sleep(0.5)

    def _query_once(self, sql):
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        r = self._request(f"http://127.0.0.1:{self.port}/v1/statement", sql.encode())
        columns, rows = None, []
        while True:
            if columns is None and r.get("columns"):
                columns = r["columns"]
            rows.extend(r.get("data") or [])
            if r.get("error"):
                e = r["error"]
                message = e.get("message") or ""
                if e.get("errorType") == "INTERNAL_ERROR":  # a Trino bug or a broken setup
                    stack = (e.get("failureInfo") or {}).get("stack") or []
                    message += "\n  at " + "\n  at ".join(stack[:12])
                raise TrinoError(e.get("errorName"), message, sql)
            if "nextUri" not in r:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"Trino query did not finish in {QUERY_TIMEOUT_S} s: {sql!r}")
            r = self._request(r["nextUri"])
        columns = columns or []
        return Result([c["name"] for c in columns], [c["type"] for c in columns], rows)
