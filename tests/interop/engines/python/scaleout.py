"""Several `skade serve` processes behind a real load balancer, for test_scaleout.py and
bench/scaleout_bench.py: a throwaway PostgreSQL cluster (tests/testing/pg_cluster.sh) as the
catalog, s3rver on loopback (tests/interop/s3rver.mjs) as the warehouse, N servers sharing one
sealing key, and nginx from Debian's packages in front of them: round robin with no affinity,
HTTP/1.1 for the REST catalog and h2c gRPC for Flight SQL, each on a port picked at start.

Everything binds 127.0.0.1 and lives in one temp folder; nothing runs as a system service.
Also here: what a careful client does behind such a balancer (a REST transport that retries a
mutation with one Idempotency-Key, a Flight SQL connection that authenticates once), and
UUIDv7 keys.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pyarrow as pa
import requests
from pyiceberg.catalog import load_catalog

import skade_harness as sk

REPO = sk.REPO
PG_SCRIPT = REPO / "tests" / "testing" / "pg_cluster.sh"
S3RVER_SCRIPT = REPO / "tests" / "interop" / "s3rver.mjs"
S3RVER_MODULE = REPO / "tests" / "interop" / "node_modules" / "s3rver" / "package.json"
# s3rver checks that the access key exists, not the signature.
S3_KEY = "S3RVER"
BUCKET = "scaleout"

USER, PASSWORD = "alice", "alice-pw"
REST_CLIENT = "app:app-secret"


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (callers retry if it is taken meanwhile)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uuid7() -> str:
    """A UUID version 7 (RFC 9562: 48-bit Unix milliseconds, then random bits), as the REST spec
    asks of Idempotency-Key values."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & (1 << 48) - 1) << 80 | 7 << 76 | (rand >> 62 & 0xFFF) << 64 | 2 << 62 | rand & (1 << 62) - 1
    return str(uuid.UUID(int=value))


def nginx_binary() -> str | None:
    """nginx on PATH, or where Debian puts it (/usr/sbin is not on every user's PATH)."""
    found = shutil.which("nginx")
    if found is None and os.access("/usr/sbin/nginx", os.X_OK):
        found = "/usr/sbin/nginx"
    return found


def postgres_binaries() -> str | None:
    """The folder of initdb/pg_ctl as pg_cluster.sh finds it, or None; psql must be there too."""
    candidates = [os.environ.get("SKADE_PG_BIN", ""), "/usr/lib/postgresql/15/bin"]
    found = shutil.which("pg_ctl") or shutil.which("initdb")
    if found:
        candidates.append(str(Path(found).parent))
    for folder in candidates:
        if folder and os.access(Path(folder) / "pg_ctl", os.X_OK) and shutil.which("psql"):
            return folder
    return None


def missing_tools() -> str | None:
    """Why a scale-out run cannot happen here (no balancer or no PostgreSQL), or None."""
    if nginx_binary() is None:
        return "nginx is not installed (scripts/setup.sh installs it)"
    if postgres_binaries() is None:
        return "PostgreSQL's binaries (initdb, pg_ctl, psql) are not installed (scripts/setup.sh installs them)"
    return None


def shared_root() -> Path:
    """A fresh folder that other users may enter: as root, PostgreSQL runs as `postgres` and
    nginx's workers as `nobody`, and pytest's own temp folders are private (0700)."""
    root = Path(tempfile.mkdtemp(prefix="skade-scaleout-"))
    root.chmod(0o755)
    return root


class PgCluster:
    """A throwaway PostgreSQL cluster on a free loopback port (pg_cluster.sh), one database per
    deployment."""

    def __init__(self, root: Path):
        self.dir = root / "pg"
        self.port = 0
        env = dict(os.environ)
        build = Path(sk.skade_binary()).resolve().parent.parent
        if (build / "CMakeCache.txt").exists():
            # The template the C++ tests cache (initdb once, then a copy per cluster).
            env["SKADE_PG_TEMPLATE"] = str(build / "pg-test-template" / "data")
        self._env = env
        errors = []
        for _ in range(3):  # a port taken between the probe and postgres' bind: try another
            port = free_port()
            proc = self._script("start", str(port))
            if proc.returncode == 0:
                self.port = port
                return
            errors.append(proc.stderr + proc.stdout)
            self._script("stop", str(port))
        raise RuntimeError("PostgreSQL did not start:\n" + "\n".join(errors)[-4000:])

    def _script(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(PG_SCRIPT), args[0], str(self.dir), *args[1:]], capture_output=True,
                              text=True, timeout=150, env=self._env)

    def create_database(self, name: str) -> str:
        """A new database: its libpq URI."""
        proc = self._script("createdb", str(self.port), name)
        if proc.returncode != 0:
            raise RuntimeError(f"createdb {name} failed: {proc.stderr}")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def sql(self, database: str, statement: str) -> list[list[str]]:
        """Rows of `statement` (psql, unaligned), each a list of text fields."""
        proc = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
                               "-X", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", statement],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"psql: {statement}: {proc.stderr}")
        return [line.split("\t") for line in proc.stdout.splitlines() if line]

    def stop(self) -> None:
        if self.port:
            self._script("stop", str(self.port))
            self.port = 0


class S3rver:
    """s3rver on a free loopback port with one bucket (BUCKET)."""

    def __init__(self, root: Path):
        if not S3RVER_MODULE.exists():
            raise RuntimeError(f"s3rver is missing from {S3RVER_MODULE.parent.parent} (run scripts/setup.sh)")
        data = root / "s3"
        data.mkdir()
        self._stderr = open(root / "s3rver.stderr", "w")
        # --openssl-legacy-provider: s3rver's ListObjectsV2 continuation tokens use DES.
        self.proc = subprocess.Popen(["node", "--openssl-legacy-provider", str(S3RVER_SCRIPT), str(data), BUCKET],
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("port "):
            self.stop()
            raise RuntimeError(f"s3rver printed no port: {line!r}; stderr: {(root / 's3rver.stderr').read_text()}")
        self.port = int(line.split()[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The AWS_* settings of a skade process that uses this server (and no ~/.aws)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": S3_KEY,
            "AWS_SECRET_ACCESS_KEY": S3_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_PROFILE": "",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }

    def pyiceberg_properties(self) -> dict[str, str]:
        return {"s3.endpoint": self.endpoint, "s3.access-key-id": S3_KEY, "s3.secret-access-key": S3_KEY,
                "s3.region": "us-east-1"}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.close()


@dataclasses.dataclass
class LbRecord:
    """One request as nginx logged it: `upstreams` are the servers it tried, in order (more than
    one when a connection failed and the request went to the next)."""

    time: float
    port: int
    method: str
    status: int
    seconds: float
    uri: str
    upstreams: list[str]
    upstream_statuses: list[str]
    grpc_status: str

    @property
    def served_by(self) -> str:
        return self.upstreams[-1] if self.upstreams else "-"


_NGINX_CONF = """\
# Written by tests/interop/engines/python/scaleout.py for one test; nginx runs in the foreground.
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log notice;
events {{ worker_connections 4096; }}
http {{
  # Tab-separated: when, which port, method, status, seconds, path, upstreams tried, their
  # statuses, gRPC status (trailer, or header of a trailers-only answer).
  log_format lb '$msec\\t$server_port\\t$request_method\\t$status\\t$request_time\\t$uri\\t$upstream_addr\\t'
                '$upstream_status\\t$sent_trailer_grpc_status$sent_http_grpc_status';
  access_log {dir}/access.log lb;
  client_body_temp_path {dir}/client_body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  client_max_body_size 0;        # DoPut streams and REST bodies of any size
  keepalive_requests 1000000;    # (HTTP/2 too) no GOAWAY every 1000 calls
  keepalive_timeout 300s;
  # Round robin, no affinity. A server whose connection fails is left out for {fail_timeout}
  # (passive health check), and a request that could not be sent to it goes to the next one.
  upstream flight {{
{flight_servers}
    keepalive 32;
  }}
  server {{
    listen 127.0.0.1:{grpc_port} http2;   # h2c: gRPC with prior knowledge
    location / {{
      grpc_pass grpc://flight;
      # Only what never reached a server is retried: every gRPC call is a POST, and nginx does
      # not resend a non-idempotent request once it was sent (no `non_idempotent`).
      grpc_next_upstream error timeout;
      grpc_next_upstream_tries 3;
      grpc_connect_timeout 2s;
      grpc_read_timeout 300s;
      grpc_send_timeout 300s;
    }}
  }}
{rest}}}
"""

_NGINX_REST = """\
  upstream rest {{
{rest_servers}
    keepalive 32;
  }}
  server {{
    listen 127.0.0.1:{http_port};
    location / {{
      proxy_pass http://rest;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;         # the SSE change feed streams
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
      proxy_connect_timeout 2s;
      proxy_read_timeout 300s;
    }}
  }}
"""


class Balancer:
    """nginx in front of servers given as (flight_port, rest_port) pairs; .grpc_port (Flight
    SQL, h2c) and .http_port (REST; None when the servers have no REST port) once it listens."""

    def __init__(self, root: Path, backends: list[tuple[int, int]], fail_timeout: str = "2s"):
        binary = nginx_binary()
        if binary is None:
            raise RuntimeError("nginx is not installed")
        self.dir = Path(tempfile.mkdtemp(prefix="lb-", dir=root))
        self.dir.chmod(0o755)
        self.backends = backends
        self.proc: subprocess.Popen | None = None

        def servers(index: int) -> str:
            return "\n".join(f"    server 127.0.0.1:{b[index]} max_fails=1 fail_timeout={fail_timeout};"
                             for b in backends)

        with_rest = all(b[1] for b in backends)
        errors = []
        for _ in range(3):  # a probed port taken before nginx binds it: try others
            self.grpc_port, self.http_port = free_port(), free_port() if with_rest else None
            rest = _NGINX_REST.format(rest_servers=servers(1), http_port=self.http_port) if with_rest else ""
            conf = self.dir / "nginx.conf"
            conf.write_text(_NGINX_CONF.format(dir=self.dir, grpc_port=self.grpc_port, flight_servers=servers(0),
                                               rest=rest, fail_timeout=fail_timeout))
            out = open(self.dir / "nginx.out", "w")
            # -e: the error log from the start (not /var/log/nginx); -p: relative paths here.
            self.proc = subprocess.Popen([binary, "-p", str(self.dir), "-e", str(self.dir / "error.log"), "-c",
                                          str(conf), "-g", "daemon off;"], stdout=out, stderr=out)
            out.close()
            if sk.wait_until(lambda: self.proc.poll() is not None or self._listening(), timeout=15) and \
                    self.proc.poll() is None:
                return
            self.stop()
            errors.append((self.dir / "nginx.out").read_text() + (self.dir / "error.log").read_text())
        raise RuntimeError("nginx did not start:\n" + "\n".join(errors)[-4000:])

    def _listening(self) -> bool:
        for port in (self.grpc_port, self.http_port or self.grpc_port):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
        return True

    @property
    def rest_uri(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def flight_uri(self) -> str:
        return f"grpc://127.0.0.1:{self.grpc_port}"

    def records(self) -> list[LbRecord]:
        """Every request logged so far (nginx writes each line when the request ends)."""
        out = []
        path = self.dir / "access.log"
        if not path.exists():
            return out
        for line in path.read_text().splitlines():
            f = line.split("\t")
            if len(f) != 9:
                continue
            out.append(LbRecord(float(f[0]), int(f[1]), f[2], int(f[3]), float(f[4]), f[5],
                                [] if f[6] == "-" else [a.strip() for a in f[6].split(",")],
                                [] if f[7] == "-" else [s.strip() for s in f[7].split(",")],
                                f[8].replace("-", "")))  # an unset variable logs as "-"
        return out

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: finish the log
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class BalancedServers:
    """Stands in for skade_harness.Server when the suite runs behind a balancer
    (SKADE_PY_BALANCED, conftest.py): `instances` servers with the same arguments on the same
    warehouse and one shared key, behind a Balancer; .flight_port and .rest_port are the
    balancer's, so that a test's every call may land on any server."""

    def __init__(self, warehouse, *extra: str, rest: bool = True, env: dict | None = None,
                 log_dir: Path | None = None, instances: int = 3):
        self.root = shared_root()
        keys = self.root / "shared.keys"
        keys.write_text(secrets.token_hex(32) + "\n")
        self.servers: list[sk.Server] = []
        self.balancer: Balancer | None = None
        try:
            for _ in range(instances):
                self.servers.append(sk.Server(warehouse, *extra, "--shared-key-file", str(keys), rest=rest, env=env,
                                              log_dir=log_dir))
            self.balancer = Balancer(self.root, [(s.flight_port, s.rest_port) for s in self.servers])
        except BaseException:
            self.stop(check=False)
            raise
        self.flight_port = self.balancer.grpc_port
        self.rest_port = self.balancer.http_port
        self.proc = None  # no one process: tests that watch one are not run behind the balancer

    @property
    def rest_uri(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def alive(self) -> bool:
        return all(s.alive() for s in self.servers) and self.balancer.alive()

    def output(self) -> str:
        return "\n".join(f"server {i}: {s.output()}" for i, s in enumerate(self.servers))

    def stop(self, check: bool = True) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        errors = []
        for s in self.servers:
            try:
                s.stop(check=check)
            except AssertionError as e:
                errors.append(str(e))
        shutil.rmtree(self.root, ignore_errors=True)
        if errors:
            raise sk.SkadeError("\n".join(errors))


class Infra:
    """PostgreSQL and s3rver, shared by the deployments of one test module (each its own
    database and bucket prefix)."""

    def __init__(self):
        self.root = shared_root()
        self.pg: PgCluster | None = None
        self.s3: S3rver | None = None
        try:
            self.pg = PgCluster(self.root)
            self.s3 = S3rver(self.root)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.s3 is not None:
            self.s3.stop()
        if self.pg is not None:
            self.pg.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class Deployment:
    """`instances` servers on one new PostgreSQL database and s3:// prefix, sharing a sealing key,
    with basic auth on Flight SQL (USER) and OAuth2 on REST (REST_CLIENT), behind a Balancer;
    env_of(i), if given, adds to the environment of server i."""

    def __init__(self, infra: Infra, log_dir: Path, instances: int = 3, env_of=None):
        self.infra = infra
        self.name = "lake_" + secrets.token_hex(6)
        self.database = self.name
        self.catalog = infra.pg.create_database(self.database)
        self.warehouse = f"s3://{BUCKET}/{self.name}"
        self.log_dir = log_dir
        keys = log_dir / f"{self.name}.keys"
        keys.write_text(secrets.token_hex(32) + "\n")
        clients = log_dir / f"{self.name}.clients"
        clients.write_text(REST_CLIENT + "\n")
        self.env = {**infra.s3.env(), "SKADE_USERS": f"{USER}:{PASSWORD}"}
        self.args = ("--catalog", self.catalog, "--shared-key-file", str(keys), "--auth", "basic", "--rest-auth",
                     "oauth2", "--rest-clients-file", str(clients))
        self.servers: list[sk.Server] = []
        self.killed: set[int] = set()
        self.balancer: Balancer | None = None
        try:
            # The catalog's tables are made by one process before the servers race to open it.
            self.cli("ns", "create", "lb")
            for i in range(instances):
                self.servers.append(self._start(env_of(i) if env_of else None))
            self.balancer = Balancer(infra.root, [(s.flight_port, s.rest_port) for s in self.servers])
        except BaseException:
            self.stop(check=False)
            raise

    def _start(self, env: dict | None, flight_port: int = 0, rest_port: int = 0) -> sk.Server:
        return sk.Server(self.warehouse, *self.args, env={**self.env, **(env or {})}, log_dir=self.log_dir,
                         flight_port=flight_port, rest_port=rest_port)

    def upstream(self, i: int, kind: str = "flight") -> str:
        s = self.servers[i]
        return f"127.0.0.1:{s.flight_port if kind == 'flight' else s.rest_port}"

    def kill(self, i: int) -> None:
        """SIGKILL server i (no cleanup) and reap it."""
        self.killed.add(i)
        self.servers[i].proc.send_signal(signal.SIGKILL)
        self.servers[i].proc.wait(10)

    def restart(self, i: int, env: dict | None = None) -> None:
        """Starts server i again on its ports (the balancer still names them)."""
        old = self.servers[i]
        old.stop(check=False)
        self.servers[i] = self._start(env, old.flight_port, old.rest_port)
        self.killed.discard(i)

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """The skade CLI on the lake, straight on the catalog (no server in between)."""
        cmd = [sk.skade_binary(), "--warehouse", self.warehouse, "--catalog", self.catalog, "--quiet", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **sk.NO_NETWORK_ENV, **self.env})
        if check and proc.returncode != 0:
            raise sk.SkadeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}{proc.stdout}")
        return proc

    def pg(self, statement: str) -> list[list[str]]:
        return self.infra.pg.sql(self.database, statement)

    def stop(self, check: bool = True) -> None:
        """Stops the balancer and the servers; with check, a server that died unasked (not
        killed by the test) or did not exit cleanly raises."""
        if self.balancer is not None:
            self.balancer.stop()
            # Kept with the servers' logs (the balancer's folder goes with the module's).
            for name in ("access.log", "error.log"):
                if (self.balancer.dir / name).exists():
                    shutil.copy(self.balancer.dir / name, self.log_dir / f"{self.name}-nginx-{name}")
        errors = []
        for i, server in enumerate(self.servers):
            try:
                server.stop(check=check and i not in self.killed)
            except AssertionError as e:
                errors.append(str(e))
        if errors:
            raise sk.SkadeError("\n".join(errors))


# ---- clients -------------------------------------------------------------------------------------

def flight_sql(uri: str):
    """An ADBC Flight SQL connection as USER (the handshake's bearer token then serves every
    server, whichever one issued it); cookies kept, for session options."""
    options = {adbc_driver_manager.DatabaseOptions.USERNAME.value: USER,
               adbc_driver_manager.DatabaseOptions.PASSWORD.value: PASSWORD,
               "adbc.flight.sql.rpc.with_cookie_middleware": "true"}
    return flightsql.connect(uri, db_kwargs=options, autocommit=True)


_RETRIED_STATUSES = {502, 503, 504}


class RetryingAdapter(requests.adapters.HTTPAdapter):
    """The transport of a REST client behind a load balancer: a mutation (POST, PUT, DELETE; not
    the OAuth2 token request) carries an Idempotency-Key made once for the logical request and
    sent again, unchanged with the same body, on every retry; a request whose connection failed
    or that got 502/503/504 is retried until `deadline_s` has passed. Thread-safe; what the last
    request of each thread needed is in .last (attempts, key)."""

    def __init__(self, deadline_s: float = 60.0):
        super().__init__(pool_connections=4, pool_maxsize=16)
        self.deadline_s = deadline_s
        self.last = threading.local()
        self._mu = threading.Lock()
        self.retries = 0
        self.keyed_retries = 0

    def send(self, request, **kwargs):
        key = None
        if request.method in ("POST", "PUT", "DELETE") and not request.url.rstrip("/").endswith("/oauth/tokens"):
            key = request.headers.setdefault("Idempotency-Key", uuid7())
        deadline = time.monotonic() + self.deadline_s
        attempts = 0
        while True:
            attempts += 1
            try:
                response = super().send(request, **kwargs)
                if not kwargs.get("stream"):
                    response.content  # read here, so a connection cut inside the body is retried too
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, requests.Timeout):
                if time.monotonic() > deadline:
                    raise
            else:
                if response.status_code not in _RETRIED_STATUSES or time.monotonic() > deadline:
                    self.last.attempts, self.last.key = attempts, key
                    return response
            with self._mu:
                self.retries += 1
                self.keyed_retries += key is not None
            time.sleep(min(0.05 * attempts, 0.5))


def rest_catalog(uri: str, s3: S3rver, adapter: RetryingAdapter | None = None, name: str = "lb"):
    """A PyIceberg RestCatalog on `uri` (OAuth2 as REST_CLIENT); with an adapter, its requests go
    through it. PyIceberg has no transport setting: its requests Session is RestCatalog._session."""
    properties = {"oauth2-server-uri": f"{uri}/v1/oauth/tokens", **s3.pyiceberg_properties()}
    catalog = load_catalog(name, type="rest", uri=uri, credential=REST_CLIENT, **properties)
    if adapter is not None:
        catalog._session.mount("http://", adapter)
    return catalog


def pyarrow_s3_environment() -> dict[str, str]:
    """pyarrow's S3 client (the AWS C++ SDK) sends payloads aws-chunked with a trailing checksum
    unless told to add checksums only where required; s3rver stores such a body as it came,
    chunk headers included. (AWS S3, MinIO and others decode it.)"""
    return {"AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED", "AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_REQUIRED"}


def upstream_counts(records: list[LbRecord], path_suffix: str = "", since: float = 0.0) -> dict[str, int]:
    """Requests per server that answered them (successful ones), of paths ending in
    path_suffix, logged at or after `since`."""
    counts: dict[str, int] = {}
    for r in records:
        if r.time >= since and r.uri.endswith(path_suffix) and r.status < 500 and r.grpc_status in ("", "0"):
            counts[r.served_by] = counts.get(r.served_by, 0) + 1
    return counts


def metric(text: str, name: str) -> float:
    """The value of an unlabelled Prometheus sample `name` in /metrics text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)


def rest_token(uri: str) -> str:
    """An OAuth2 bearer token of REST_CLIENT from the token endpoint at `uri`."""
    client_id, secret = REST_CLIENT.split(":")
    response = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": "catalog"})
    response.raise_for_status()
    return response.json()["access_token"]


def rest_metrics(server: sk.Server, token: str) -> str:
    """/metrics of one server, straight (not through the balancer)."""
    response = requests.get(f"{server.rest_uri}/metrics", timeout=10, headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    return response.text


# ---- writes and a mixed load through the balancer ---------------------------------------------

WRITES_SCHEMA = "id BIGINT NOT NULL, kind VARCHAR, attempt INTEGER"

# Each kind of write goes to a table of its own: writers of one table on different servers
# contend through the catalog's compare-and-swap, and on 2 cores the slowest (a PyIceberg
# append, re-based by the server each time it loses) would starve (bench/RESULTS.md, section z).
# What each kind of write is, and what protects it from being applied twice when its answer is
# lost (a server killed between its commit and its answer):
#   rest       PyIceberg append (commitTable); the REST spec's Idempotency-Key, one per append,
#              sent again unchanged with every retry: the server answers a retry with the first
#              commit's answer.
#   put        ADBC bulk ingest (Flight SQL DoPut, CommandStatementIngest); Flight SQL has no
#              idempotency key, so the client reads its ids back before sending the rows again.
#   sql        Flight SQL INSERT … SELECT … WHERE NOT EXISTS (its id): a retry that finds the
#              row inserts nothing.
#   sql-plain  Flight SQL INSERT … VALUES, retried as it is: nothing protects it.
KINDS = ("rest", "put", "sql", "sql-plain")
TABLES = {"rest": "lb.w_rest", "put": "lb.w_put", "sql": "lb.w_sql", "sql-plain": "lb.w_plain"}
_ID_BASE = {"rest": 1_000_000, "put": 2_000_000, "sql": 3_000_000, "sql-plain": 4_000_000}


def create_write_tables(d: "Deployment", tables: dict[str, str] = TABLES) -> None:
    for table in sorted(set(tables.values())):
        d.cli("create", table, "--schema", WRITES_SCHEMA)


@dataclasses.dataclass
class Write:
    """One logical write and what it took: attempts (requests sent; for REST the commit
    requests), whether it was acknowledged (an answer said it committed, or for `put` the
    read-back found it), the rows its last attempt changed (SQL), and when."""

    kind: str
    ids: list[int]
    attempts: int = 0
    acknowledged: bool = False
    read_back: bool = False
    last_rows_changed: int | None = None
    errors: list[str] = dataclasses.field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    seconds: float = 0.0


class Writers:
    """Writes of each kind (KINDS) into its table (`tables`, kind → table) through the balancer,
    with the retries a careful client makes; each thread has its own connections. Thread-safe."""

    def __init__(self, deployment: Deployment, adapter: RetryingAdapter, tables: dict[str, str] = TABLES,
                 deadline_s: float = 60.0, rows_per_write: int = 3):
        self.d = deployment
        self.adapter = adapter
        self.tables = dict(tables)
        self.deadline_s = deadline_s
        self.rows = rows_per_write
        self._local = threading.local()
        self._mu = threading.Lock()
        self._next = dict(_ID_BASE)

    def ids(self, kind: str, n: int) -> list[int]:
        with self._mu:
            first = self._next[kind]
            self._next[kind] += n
        return list(range(first, first + n))

    # -- connections (per thread) --

    def connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = flight_sql(self.d.balancer.flight_uri)
        return conn

    def reconnect(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may not close cleanly
                pass

    def catalog(self):
        catalog = getattr(self._local, "catalog", None)
        if catalog is None:
            catalog = self._retry(lambda: rest_catalog(self.d.balancer.rest_uri, self.d.infra.s3, self.adapter))
            self._local.catalog = catalog
        return catalog

    def _retry(self, fn, what: list | None = None):
        """fn() until it returns, for calls that are safe to repeat (reads, connecting)."""
        deadline = time.monotonic() + self.deadline_s
        failures = 0
        while True:
            try:
                return fn()
            except Exception as e:  # noqa: BLE001 - any failure of a repeatable call is retried
                failures += 1
                if what is not None:
                    what.append(f"{type(e).__name__}: {e}"[:300])
                if time.monotonic() > deadline:
                    raise
                if failures % 3 == 0:
                    self.reconnect()
                time.sleep(min(0.05 * failures, 0.5))

    def query(self, sql: str, params=None, errors: list | None = None) -> list[tuple]:
        """Rows of a query (through the balancer), retried until it answers."""
        def run():
            with self.connection().cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall()
        return self._retry(run, errors)

    def count_ids(self, table: str, ids: list[int], errors: list | None = None) -> int:
        (n,), = self.query(f"SELECT count(*) FROM {table} WHERE id BETWEEN {min(ids)} AND {max(ids)}",
                           errors=errors)
        return n

    def count_all(self, errors: list | None = None) -> int:
        """Rows in all the write tables, in one query (one snapshot of each)."""
        tables = sorted(set(self.tables.values()))
        (n,), = self.query("SELECT " + " + ".join(f"(SELECT count(*) FROM {t})" for t in tables), errors=errors)
        return n

    # -- writes --

    def _write(self, w: Write, attempt_fn) -> Write:
        """Runs attempt_fn(attempt) -> bool (acknowledged) until acknowledged or the deadline."""
        w.started, t0 = time.time(), time.monotonic()
        while not w.acknowledged:
            w.attempts += 1
            try:
                w.acknowledged = attempt_fn(w.attempts)
            except Exception as e:  # noqa: BLE001 - every failure is noted; what follows depends on the kind
                w.errors.append(f"{type(e).__name__}: {e}"[:300])
                if time.monotonic() - t0 > self.deadline_s:
                    break
                if w.attempts % 3 == 0:
                    self.reconnect()
                time.sleep(min(0.05 * w.attempts, 0.5))
        w.ended, w.seconds = time.time(), time.monotonic() - t0
        return w

    def rest(self) -> Write:
        """One PyIceberg append of rows_per_write rows (load the table, write files, commit)."""
        w = Write("rest", self.ids("rest", self.rows))
        w.started, t0 = time.time(), time.monotonic()
        try:
            # A table load is repeatable; the commit is retried inside the adapter, with its key.
            table = self._retry(lambda: self.catalog().load_table(self.tables["rest"]), w.errors)
            data = pa.Table.from_pylist([{"id": i, "kind": "rest", "attempt": 1} for i in w.ids],
                                        schema=table.schema().as_arrow())
            table.append(data)
            w.acknowledged = True
        except Exception as e:  # noqa: BLE001 - an append given up stays unacknowledged
            w.errors.append(f"{type(e).__name__}: {e}"[:300])
        w.attempts = getattr(self.adapter.last, "attempts", 1)
        w.ended, w.seconds = time.time(), time.monotonic() - t0
        return w

    def put(self) -> Write:
        """One ADBC bulk ingest (DoPut) of rows_per_write rows; after a failure the ids are read
        back: all there, it committed; none, it is sent again; some, a batch was split (a bug,
        left for the checks to find)."""
        w = Write("put", self.ids("put", self.rows))
        namespace, name = self.tables["put"].split(".")

        def attempt(n: int) -> bool:
            if n > 1:
                landed = self.count_ids(self.tables["put"], w.ids, w.errors)
                if landed == len(w.ids):
                    w.read_back = True
                    return True
                if landed:
                    raise AssertionError(f"ingest {w.ids} is partly in the table ({landed} rows)")
            data = pa.table({"id": pa.array(w.ids, pa.int64()), "kind": ["put"] * len(w.ids),
                             "attempt": pa.array([n] * len(w.ids), pa.int32())})
            with self.connection().cursor() as cur:
                written = cur.adbc_ingest(name, data, mode="append", db_schema_name=namespace)
            if written != len(w.ids):
                raise AssertionError(f"ingest answered {written} rows, sent {len(w.ids)}")
            return True

        return self._write(w, attempt)

    def sql(self, guarded: bool = True) -> Write:
        """One Flight SQL INSERT of one row (executed as a query, as ADBC's execute() sends it);
        guarded: INSERT … SELECT … WHERE NOT EXISTS, so a retry after a lost answer adds
        nothing."""
        kind = "sql" if guarded else "sql-plain"
        w = Write(kind, self.ids(kind, 1))
        (i,) = w.ids
        table = self.tables[kind]

        def attempt(n: int) -> bool:
            if guarded:
                statement = (f"INSERT INTO {table} SELECT {i}, '{kind}', {n} "
                             f"WHERE NOT EXISTS (SELECT 1 FROM {table} WHERE id = {i})")
            else:
                statement = f"INSERT INTO {table} VALUES ({i}, '{kind}', {n})"
            with self.connection().cursor() as cur:
                cur.execute(statement)
                (changed,), = cur.fetchall()
            w.last_rows_changed = changed
            return True

        return self._write(w, attempt)

    def write(self, kind: str) -> Write:
        if kind == "rest":
            return self.rest()
        if kind == "put":
            return self.put()
        return self.sql(guarded=kind == "sql")


@dataclasses.dataclass
class Query:
    started: float
    seconds: float  # to its answer, retries included
    attempts: int
    count: int


class MixedLoad:
    """Threads writing and querying through the balancer until stop(): `queriers` threads
    alternating a count of all write tables and a prepared count with a parameter, and per kind
    in `kinds` (kind → threads) threads making writes of that kind one after another. The count
    of all rows must never go down for one thread (each query starts after the one before was
    answered, on whichever server): a drop is recorded in .violations."""

    def __init__(self, writers: Writers, queriers: int = 2, kinds: dict[str, int] | None = None):
        self.w = writers
        self.kinds = kinds if kinds is not None else {"rest": 1, "put": 1, "sql": 1, "sql-plain": 1}
        self.writes: list[Write] = []
        self.queries: list[Query] = []
        self.client_errors: list[str] = []
        self.violations: list[str] = []
        self.crashes: list[str] = []
        self._mu = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._guard, args=(self._querier, q), daemon=True)
                         for q in range(queriers)]
        for kind, n in self.kinds.items():
            self._threads += [threading.Thread(target=self._guard, args=(self._writer, kind), daemon=True)
                              for _ in range(n)]

    def _guard(self, fn, arg) -> None:
        try:
            fn(arg)
        except BaseException as e:  # noqa: BLE001 - a worker's own bug must fail the run, not vanish
            with self._mu:
                self.crashes.append(f"{fn.__name__}({arg}): {type(e).__name__}: {e}")

    def _querier(self, q: int) -> None:
        highest = 0  # of the count of all rows
        n = 0
        while not self._stop.is_set():
            n += 1
            errors: list[str] = []
            started, t0 = time.time(), time.monotonic()
            if n % 2:
                count = self.w.count_all(errors)
            else:
                (count,), = self.w.query(f"SELECT count(*) FROM {self.w.tables['put']} WHERE kind <> ?", ("none",),
                                         errors=errors)
            seconds = time.monotonic() - t0
            with self._mu:
                self.queries.append(Query(started, seconds, len(errors) + 1, count))
                self.client_errors += errors
                if n % 2 and count < highest:
                    self.violations.append(f"querier {q}: count went down from {highest} to {count}")
            if n % 2:
                highest = max(highest, count)

    def _writer(self, kind: str) -> None:
        while not self._stop.is_set():
            w = self.w.write(kind)
            with self._mu:
                self.writes.append(w)
                self.client_errors += w.errors

    def start(self) -> "MixedLoad":
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 120) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.1, deadline - time.monotonic()))
        alive = [t for t in self._threads if t.is_alive()]
        if alive:
            self.crashes.append(f"{len(alive)} load threads still running {timeout} s after stop")


# ---- what must hold afterwards -------------------------------------------------------------------

def table_rows(d: Deployment, tables: dict[str, str] = TABLES) -> list[dict]:
    """The rows of the write tables (with `table`) as the CLI reads them straight from the
    catalog (no server)."""
    union = " UNION ALL ".join(f"SELECT id, kind, attempt, '{t}' AS \"table\" FROM {t}"
                               for t in sorted(set(tables.values())))
    return json.loads(d.cli("sql", union, "--format", "json").stdout)


def check_writes(writes: list[Write], rows: list[dict]) -> tuple[list[str], dict[str, int]]:
    """What the writes' protocols promise, against the rows found: an acknowledged write is there
    exactly once, an unacknowledged one at most once, all rows of a write or none; `sql-plain`
    (nothing protects it) is there at least once and at most once per request sent. Returns
    the broken promises and counts (`copies KIND`: landed copies of writes of a kind, i.e. the
    commits they made; `doubled sql-plain`: plain INSERTs that landed more than once)."""
    present = collections.Counter(r["id"] for r in rows)
    problems: list[str] = []
    stats: collections.Counter = collections.Counter()
    written: set[int] = set()
    for w in writes:
        written.update(w.ids)
        counts = {present[i] for i in w.ids}
        if len(counts) != 1:
            problems.append(f"{w.kind} write {w.ids[0]}..{w.ids[-1]} is split: copies per row {sorted(counts)}")
            continue
        (n,) = counts
        stats[f"copies {w.kind}"] += n
        stats[f"{w.kind} writes"] += 1
        stats[f"{w.kind} retried"] += w.attempts > 1
        stats[f"{w.kind} read back"] += w.read_back
        if w.kind == "sql-plain":
            low = 1 if w.acknowledged else 0
            if not low <= n <= w.attempts:
                problems.append(f"plain INSERT of id {w.ids[0]} ({w.attempts} requests, acknowledged "
                                f"{w.acknowledged}) is there {n} times")
            stats["doubled sql-plain"] += n > 1
        elif w.acknowledged and n != 1:
            problems.append(f"acknowledged {w.kind} write {w.ids[0]}..{w.ids[-1]} ({w.attempts} attempts) "
                            f"is there {n} times")
        elif not w.acknowledged and n > 1:
            problems.append(f"unacknowledged {w.kind} write {w.ids[0]}..{w.ids[-1]} is there {n} times")
        if not w.acknowledged:
            stats[f"{w.kind} unacknowledged"] += 1
    strangers = set(present) - written
    if strangers:
        problems.append(f"{len(strangers)} ids nobody wrote, e.g. {sorted(strangers)[:5]}")
    return problems, dict(stats)


def commit_log(d: Deployment) -> list[dict]:
    """The whole commit log, oldest first, as the CLI reads it from the catalog."""
    return json.loads(d.cli("log", "--json", "--after", "0", "--limit", "100000000").stdout)


def check_log(log: list[dict], rows: list[dict], stats: dict[str, int],
              tables: dict[str, str] = TABLES) -> list[str]:
    """The commit log is dense (commit_seq 1..N, in order), and each write table has, after its
    creation, exactly one commit per landed copy of a write (stats from check_writes), adding the
    rows it holds."""
    problems = []
    seqs = [e["commit_seq"] for e in log]
    if seqs != list(range(1, len(seqs) + 1)):
        gaps = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
        problems.append(f"commit log not dense: {len(seqs)} entries up to {max(seqs, default=0)}, missing "
                        f"{gaps[:10]}, duplicates {len(seqs) - len(set(seqs))}")
    for table in sorted(set(tables.values())):
        commits = sum(stats.get(f"copies {kind}", 0) for kind, t in tables.items() if t == table)
        held = sum(1 for r in rows if r["table"] == table)
        mine = [e for e in log if e["table"] == table and e["operation"] != "create"]
        if len(mine) != commits:
            problems.append(f"{table}: {len(mine)} commits logged, its writes landed {commits} times")
        added = sum(e["added_records"] for e in mine)
        if added != held:
            problems.append(f"{table}: the log's commits added {added} rows, the table has {held}")
    return problems


def event_ids(rest_uri: str, page_size: int = 50) -> list[int]:
    """The commit_seq of every event of the REST events endpoint (POST /v1/events), paging with
    its continuation token: through a balancer each page may come from another server."""
    token = rest_token(rest_uri)
    headers = {"Authorization": f"Bearer {token}"}
    seqs: list[int] = []
    body: dict = {"page-size": page_size}
    while True:
        response = requests.post(f"{rest_uri}/v1/events", json=body, headers=headers, timeout=60)
        response.raise_for_status()
        page = response.json()
        if not page["events"]:
            return seqs
        seqs += [int(e["event-id"]) for e in page["events"]]
        body = {"page-size": page_size, "continuation-token": page["continuation-token"]}
