"""Several `skade serve` processes on one lake with one shared key (--shared-key-file), as behind a
load balancer with no affinity: pyarrow's Flight client authenticates on one server and fetches
on another; a REST OAuth2 token of one server is accepted by another; the change feed of one
carries the commits made through another. A server with another key accepts nothing of theirs.

Oracles: the rows the test inserted through the CLI, and the protocol status codes.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as flight
import pytest
from pyiceberg.catalog import load_catalog

import skade_harness as sk


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def statement_query(sql: str) -> flight.FlightDescriptor:
    """A CMD descriptor of Flight SQL's CommandStatementQuery, packed in a protobuf Any."""
    command = _field(1, sql.encode())
    any_message = _field(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + _field(2, command)
    return flight.FlightDescriptor.for_command(any_message)


def key_file(path: Path, *keys: str) -> str:
    path.write_text("# shared by the servers of this test\n" + "\n".join(keys) + "\n")
    return str(path)


@pytest.fixture
def cluster(warehouse: Path, tmp_path: Path, serve):
    """Two servers sharing a key and a third with its own, on one lake with db.t (3 rows)."""
    sk.run(warehouse, "ns", "create", "db")
    sk.run(warehouse, "create", "db.t", "--schema", "x BIGINT")
    sk.run(warehouse, "sql", "INSERT INTO db.t VALUES (1), (2), (3)")
    (tmp_path / "clients").write_text("app:app-secret\n")
    shared = key_file(tmp_path / "shared.keys", secrets.token_hex(32))
    other = key_file(tmp_path / "other.keys", secrets.token_hex(32))
    env = {"SKADE_USERS": "alice:pw-a,bob:pw-b"}
    args = ["--auth", "basic", "--rest-auth", "oauth2", "--rest-clients-file", str(tmp_path / "clients")]
    one = serve(warehouse, *args, "--shared-key-file", shared, env=env)
    two = serve(warehouse, *args, "--shared-key-file", shared, env=env)
    stranger = serve(warehouse, *args, "--shared-key-file", other, env=env)
    return one, two, stranger


def client(server: sk.Server) -> flight.FlightClient:
    return flight.FlightClient(f"grpc://127.0.0.1:{server.flight_port}")


def bearer(server: sk.Server, user: str, password: str) -> flight.FlightCallOptions:
    """Handshake with basic credentials on `server`: call options carrying its bearer token."""
    header = client(server).authenticate_basic_token(user, password)
    return flight.FlightCallOptions(headers=[header])


def test_a_token_and_a_ticket_of_one_server_work_on_another(cluster):
    one, two, stranger = cluster
    alice = bearer(one, "alice", "pw-a")
    info = client(one).get_flight_info(statement_query("SELECT x FROM db.t ORDER BY x"), alice)
    ticket = info.endpoints[0].ticket
    # The second server takes the first one's bearer token and serves its ticket.
    table = client(two).do_get(ticket, alice).read_all()
    assert table.column("x").to_pylist() == [1, 2, 3]
    # Bob, authenticated on the second server, gets nothing from alice's ticket.
    with pytest.raises(KeyError, match="unknown, expired or closed statement ticket"):  # NOT_FOUND
        client(two).do_get(ticket, bearer(two, "bob", "pw-b")).read_all()
    # A server with another key takes neither the token nor the ticket.
    with pytest.raises(flight.FlightUnauthenticatedError):
        client(stranger).get_flight_info(statement_query("SELECT 1"), alice)
    with pytest.raises(KeyError, match="unknown, expired or closed statement ticket"):  # NOT_FOUND
        client(stranger).do_get(ticket, bearer(stranger, "alice", "pw-a")).read_all()


def rest_token(server: sk.Server) -> str:
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": "app",
                                   "client_secret": "app-secret", "scope": "catalog"}).encode()
    request = urllib.request.Request(f"{server.rest_uri}/v1/oauth/tokens", data=body, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["access_token"]


def rest_status(server: sk.Server, token: str) -> int:
    request = urllib.request.Request(f"{server.rest_uri}/v1/namespaces",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def test_a_rest_oauth_token_of_one_server_works_on_another(cluster):
    one, two, stranger = cluster
    token = rest_token(one)
    assert rest_status(one, token) == 200
    assert rest_status(two, token) == 200
    assert rest_status(stranger, token) == 401
    # One changed character and the token is nobody's.
    forged = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    assert rest_status(two, forged) == 401


def test_a_bad_key_file_stops_serve_with_a_clear_error(warehouse: Path, tmp_path: Path):
    bad = key_file(tmp_path / "bad.keys", "not-hex")
    proc = sk.run(warehouse, "serve", "--flight-port", "0", "--shared-key-file", bad, check=False, timeout=60)
    assert proc.returncode != 0
    assert "sealing keys: entry 2 is not 64 hex digits" in proc.stderr
    assert "not-hex" not in proc.stderr, "a key (even a bad one) is never shown"
    env_bad = {**os.environ, "SKADE_SHARED_KEYS": "ab" * 16}
    proc = subprocess.run([sk.skade_binary(), "--warehouse", str(warehouse), "--quiet", "serve", "--flight-port",
                              "0"], capture_output=True, text=True, timeout=60, env={**env_bad, **sk.NO_NETWORK_ENV})
    assert proc.returncode != 0
    assert "$SKADE_SHARED_KEYS" in proc.stderr and "entry 1 is not 64 hex digits" in proc.stderr


def sse_commits(server: sk.Server, token: str, after: int, want: int, timeout: float = 20) -> list[dict]:
    """The first `want` commit events of the SSE change feed of `server` after commit_seq `after`."""
    request = urllib.request.Request(f"{server.rest_uri}/v1/events/stream?after={after}",
                                     headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"})
    events: list[dict] = []
    with urllib.request.urlopen(request, timeout=timeout) as response:
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: "):]))
                if len(events) == want:
                    return events
    return events


def test_the_change_feed_of_one_server_carries_the_commits_made_through_another(cluster, warehouse: Path):
    one, two, _ = cluster
    head = sk.run(warehouse, "log", "--json").stdout
    before = max((e["commit_seq"] for e in json.loads(head)), default=0)
    # A commit through the first server (PyIceberg over REST) and one by a third process (the
    # CLI) on the same catalog: the second server's feed has both, in commit_seq order.
    catalog = load_catalog("one", type="rest", uri=one.rest_uri, credential="app:app-secret")
    catalog.load_table("db.t").append(pa.table({"x": pa.array([4, 5], pa.int64())}))
    sk.run(warehouse, "sql", "INSERT INTO db.t VALUES (6)")
    events = sse_commits(two, rest_token(one), before, 2)
    assert [e["commit-seq"] for e in events] == [before + 1, before + 2], events
    assert [e["identifier"] for e in events] == [{"namespace": ["db"], "name": "t"}] * 2
    assert [e["added-records"] for e in events] == [2, 1]
