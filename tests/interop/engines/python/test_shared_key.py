"""Several `skade serve` processes on one lake with one shared key (--shared-key-file), as behind a
load balancer with no affinity: pyarrow's Flight client authenticates on one server and fetches
on another; a REST OAuth2 token of one server is accepted by another. A server with another key
accepts nothing of theirs.

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

import pyarrow.flight as flight
import pytest

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
