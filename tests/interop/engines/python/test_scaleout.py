"""Three `skade serve` processes on one PostgreSQL catalog and an s3:// warehouse (s3rver), behind
nginx (round robin, no affinity; h2c gRPC for Flight SQL, HTTP/1.1 for REST): Flight SQL and the
REST catalog work through it with every call free to land anywhere, and a server killed with
SIGKILL in the middle of a mixed load costs no acknowledged write and doubles none that a
protocol protects (scaleout.py says which protects what).

Oracles: the rows and ids the test wrote; nginx's access log (which server answered each call);
each server's own /metrics; the commit log read by the CLI straight from PostgreSQL.
"""

from __future__ import annotations

import fnmatch
import json
import time
import urllib.request

import adbc_driver_manager
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

import scaleout as so

FLIGHT = "/arrow.flight.protocol.FlightService/"

# After a call that failed (a server killed under it), the ADBC driver manager's cursor, closed
# once by its `with`, complains again when collected ("Underflow in closing this AdbcStatement").
pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function Cursor.__del__:pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(scope="module")
def infra():
    reason = so.missing_tools()
    if reason:
        pytest.skip(reason)
    infra = so.Infra()
    yield infra
    infra.stop()


@pytest.fixture(autouse=True)
def pyarrow_s3(monkeypatch):
    for name, value in so.pyarrow_s3_environment().items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def deploy(infra, tmp_path):
    """deploy(**Deployment kwargs) -> a Deployment, stopped at the end; a server that died unasked
    fails the test."""
    made: list[so.Deployment] = []

    def make(**kwargs) -> so.Deployment:
        d = so.Deployment(infra, tmp_path, **kwargs)
        made.append(d)
        return d

    yield make
    errors = []
    for d in made:
        try:
            d.stop()
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


def moved_tickets(records: list[so.LbRecord]) -> tuple[int, int]:
    """(DoGets, DoGets served by another server than the GetFlightInfo before them), of a client
    that makes one call at a time."""
    fetches = moved = 0
    info = None
    for r in records:
        if r.uri == FLIGHT + "GetFlightInfo":
            info = r
        elif r.uri == FLIGHT + "DoGet" and info is not None:
            fetches += 1
            moved += r.served_by != info.served_by
            info = None
    return fetches, moved


def _like(text: str, pattern: str) -> bool:
    """SQL LIKE with % only (the patterns below have no _)."""
    return fnmatch.fnmatchcase(text, pattern.replace("%", "*"))


def assert_all_ok(records: list[so.LbRecord]) -> None:
    bad = [r for r in records if r.status >= 400 or r.grpc_status not in ("", "0")]
    assert not bad, f"calls that failed through the balancer: {bad[:5]}"


def test_flight_sql_through_the_balancer(deploy):
    d = deploy()
    d.cli("create", "lb.items", "--schema", "id BIGINT NOT NULL, name VARCHAR, qty INTEGER")
    model: list[tuple[int, str, int]] = []
    with so.flight_sql(d.balancer.flight_uri) as conn, conn.cursor() as cur:
        # The handshake's bearer token, from one server, is taken by the others.
        cur.execute("SELECT current_user")
        assert cur.fetchall() == [(so.USER,)]
        # Bulk ingest (DoPut), then reads on the other servers see it at once.
        batch = [(i, f"item{i}", i % 7) for i in range(1, 31)]
        data = pa.table({"id": pa.array([r[0] for r in batch], pa.int64()), "name": [r[1] for r in batch],
                         "qty": pa.array([r[2] for r in batch], pa.int32())})
        assert cur.adbc_ingest("items", data, mode="append", db_schema_name="lb") == 30
        model += batch
        # SQL writes, each read back right after (by the next servers in the round).
        for k in range(6):
            cur.execute(f"INSERT INTO lb.items VALUES ({100 + k}, 'sql{k}', {k})")
            assert cur.fetchall() == [(1,)]
            model.append((100 + k, f"sql{k}", k))
            cur.execute("SELECT count(*), max(id) FROM lb.items")
            assert cur.fetchall() == [(len(model), 100 + k)]
        # One prepared statement (its handle and bound parameters sealed), executed again and
        # again with other values.
        query = "SELECT count(*), sum(qty) FROM lb.items WHERE id >= ? AND name LIKE ?"
        for low, pattern in [(0, "item%"), (5, "item%"), (10, "sql%"), (102, "sql%"), (20, "%1%"), (0, "%")]:
            cur.execute(query, (low, pattern))
            members = [r for r in model if r[0] >= low and _like(r[1], pattern)]
            assert cur.fetchall() == [(len(members), sum(r[2] for r in members) if members else None)], (low, pattern)
    # Session options: the default schema set once (SetSessionOptions, a sealed cookie), then
    # unqualified names work on every server.
    with so.flight_sql(d.balancer.flight_uri) as conn:
        conn.adbc_connection.set_options(**{"adbc.connection.db_schema": "lb"})
        with conn.cursor() as cur:
            for _ in range(4):
                cur.execute("SELECT count(*) FROM items")
                assert cur.fetchall() == [(len(model),)]
    records = [r for r in d.balancer.records() if r.port == d.balancer.grpc_port]
    with so.flight_sql(d.balancer.flight_uri) as conn, conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error):
            cur.execute("SELECT count(*) FROM items")  # no session: no default schema
            cur.fetchall()

    assert_all_ok(records)
    # A ticket (or prepared handle) made by one server was fetched from another.
    fetches, moved = moved_tickets(records)
    assert fetches >= 20 and moved >= fetches // 2, (fetches, moved)
    for call in ("GetFlightInfo", "DoGet"):
        served = so.upstream_counts(records, FLIGHT + call)
        assert len(served) >= 2, f"{call} served by {served}"
    assert len({r.served_by for r in records}) == 3, "every server answered Flight SQL calls"
    assert so.upstream_counts(records, FLIGHT + "Handshake"), "no handshake went through the balancer"
    # The CLI, reading the catalog and S3 without a server, sees the same rows.
    rows = json.loads(d.cli("sql", "SELECT id, name, qty FROM lb.items", "--format", "json").stdout)
    assert sorted((r["id"], r["name"], r["qty"]) for r in rows) == sorted(model)


def test_rest_catalog_through_the_balancer(deploy):
    d = deploy()
    adapter = so.RetryingAdapter()
    catalog = so.rest_catalog(d.balancer.rest_uri, d.infra.s3, adapter)
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()),
                    NestedField(3, "qty", IntegerType()))
    catalog.create_table("lb.books", schema)
    expected = []
    for k in range(6):
        table = catalog.load_table("lb.books")
        batch = [{"id": 10 * k + j, "name": f"b{k}.{j}", "qty": k} for j in range(3)]
        table.append(pa.Table.from_pylist(batch, schema=table.schema().as_arrow()))
        expected += batch
        # Read back at once through the balancer (another server loads the table).
        scanned = catalog.load_table("lb.books").scan().to_arrow().to_pylist()
        assert sorted(scanned, key=lambda r: r["id"]) == expected
        # A fourth request per round: with three, round robin would give every commit to one server.
        assert catalog.list_tables("lb") == [("lb", "books")]
    assert adapter.retries == 0, "nothing failed, nothing was retried"

    # Commits spread over the servers, by their own counters and by the balancer's log.
    token = so.rest_token(d.balancer.rest_uri)
    commits = [so.metric(so.rest_metrics(s, token), "skade_rest_commits_total") for s in d.servers]
    records = [r for r in d.balancer.records() if r.port == d.balancer.http_port]
    assert_all_ok(records)
    posts = [r for r in records if r.method == "POST" and r.uri == "/v1/namespaces/lb/tables/books"]
    assert [so.upstream_counts(posts).get(d.upstream(i, "rest"), 0) for i in range(3)] == commits
    assert sum(commits) == 6 and sum(c > 0 for c in commits) >= 2, f"commits per server: {commits}"
    assert len({r.served_by for r in records}) == 3, "every server answered REST requests"

    # The CLI (catalog and S3, no server) reads what PyIceberg wrote.
    rows = json.loads(d.cli("sql", "SELECT id, name, qty FROM lb.books", "--format", "json").stdout)
    assert sorted((r["id"], r["name"], r["qty"]) for r in rows) == sorted(
        (r["id"], r["name"], r["qty"]) for r in expected)
    # The change feed through the balancer (SSE, not buffered by it) is the commit log.
    log = so.commit_log(d)
    want = [e["commit_seq"] for e in log]
    assert want == list(range(1, 8)), want  # the create and six appends
    request = urllib.request.Request(f"{d.balancer.rest_uri}/v1/events/stream?after=0",
                                     headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"})
    seen: list[int] = []
    with urllib.request.urlopen(request, timeout=20) as response:
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                seen.append(json.loads(line[len("data: "):])["commit-seq"])
                if len(seen) == len(want):
                    break
    assert seen == want
    assert so.event_ids(d.balancer.rest_uri, page_size=2) == want


LOAD_BEFORE_KILL_S = 5.0
LOAD_AFTER_KILL_S = 8.0


def test_kill_9_of_one_instance_under_mixed_load(deploy):
    d = deploy()
    so.create_write_tables(d)
    writers = so.Writers(d, so.RetryingAdapter(deadline_s=60))
    load = so.MixedLoad(writers, queriers=2, kinds={"rest": 1, "put": 1, "sql": 1, "sql-plain": 1}).start()
    time.sleep(LOAD_BEFORE_KILL_S)
    victim = 1
    killed_at = time.time()
    d.kill(victim)
    time.sleep(LOAD_AFTER_KILL_S)
    load.stop()
    assert not load.crashes, load.crashes
    assert not load.violations, load.violations

    records = d.balancer.records()
    gone = {d.upstream(victim, "flight"), d.upstream(victim, "rest")}
    # The kill came in the middle of the load: the victim was answering just before.
    assert any(r.served_by in gone and killed_at - 3 <= r.time <= killed_at for r in records), \
        "the victim served nothing in the 3 s before the kill"
    # Afterwards the balancer sent everything to the two others (a request it tried on the
    # victim's closed port went on to the next server).
    after = [r for r in records if r.time > killed_at + 0.5]
    assert after and not [r for r in after if r.served_by in gone and r.status < 500], "served by the dead server"
    # And every kind of write went on being acknowledged.
    for kind in so.KINDS:
        done = [w for w in load.writes if w.kind == kind and w.acknowledged and w.ended > killed_at + 0.5]
        assert done, f"no {kind} write acknowledged after the kill"
    assert [q for q in load.queries if q.started > killed_at + 0.5], "no query answered after the kill"

    rows = so.table_rows(d)
    problems, stats = so.check_writes(load.writes, rows)
    assert not problems, problems
    assert not [w for w in load.writes if not w.acknowledged], \
        [(w.kind, w.errors[-1:]) for w in load.writes if not w.acknowledged]
    log = so.commit_log(d)
    problems = so.check_log(log, rows, stats)
    assert not problems, problems
    # The same log through the REST events endpoint, its pages from any server.
    assert so.event_ids(d.balancer.rest_uri, page_size=25) == [e["commit_seq"] for e in log]
    print(f"\nmixed load: {len(load.writes)} writes, {len(load.queries)} queries, "
          f"{len(load.client_errors)} failed calls retried by the clients; {stats}")


CRASH = {"SKADE_CRASH_POINT": "commit.after_log"}


def test_an_answer_lost_after_its_commit_is_not_a_second_commit(deploy):
    """A server that dies right after its first commit is in the catalog, before it answers (the
    crash point commit.after_log, SIGKILL): the client's retry lands on another server. For each
    kind the protected write is there once; the plain INSERT, which nothing protects, twice."""
    crashing = 2
    d = deploy(env_of=lambda i: CRASH if i == crashing else None)
    so.create_write_tables(d)
    adapter = so.RetryingAdapter(deadline_s=60)
    writers = so.Writers(d, adapter, rows_per_write=2)
    writes: list[so.Write] = []
    lost: dict[str, so.Write] = {}
    for kind in so.KINDS:
        if kind != "rest":
            d.restart(crashing, env=CRASH)
        # Writes until one of them commits on the crashing server (round robin reaches it, once
        # nginx's fail_timeout for its earlier death, 2 s, is over).
        deadline = time.monotonic() + 30
        while d.servers[crashing].alive() and time.monotonic() < deadline:
            w = writers.write(kind)
            writes.append(w)
            assert w.acknowledged, (kind, w.errors)
        assert not d.servers[crashing].alive(), f"no {kind} write reached the crashing server in 30 s"
        d.killed.add(crashing)
        lost[kind] = writes[-1]
        assert lost[kind].attempts > 1, (kind, "the lost answer was not retried")

    # REST: the retry carried the same Idempotency-Key and got the first commit's answer (200),
    # not a 409 for a commit whose base had moved (PyIceberg would recover from that on its own,
    # finding its snapshot id in the table: not what is tested here).
    commits = [r for r in d.balancer.records() if r.method == "POST" and r.uri == "/v1/namespaces/lb/tables/w_rest"]
    assert adapter.keyed_retries >= 1
    assert sorted({r.status for r in commits}) == [200, 502], [(r.status, r.served_by) for r in commits]
    # DoPut: the client found its rows already there and did not send them again.
    assert lost["put"].read_back
    # Guarded INSERT: the retry's NOT EXISTS found the row; it inserted nothing.
    assert lost["sql"].last_rows_changed == 0
    rows = so.table_rows(d)
    problems, stats = so.check_writes(writes, rows)
    assert not problems, problems
    # The plain INSERT whose answer was lost is there twice: Flight SQL has no idempotency key,
    # and a client that retries it as it is doubles it. (What the guarded form above avoids.)
    assert sorted(r["attempt"] for r in rows if r["id"] == lost["sql-plain"].ids[0]) == [1, 2]
    assert stats["doubled sql-plain"] == 1, stats
    problems = so.check_log(so.commit_log(d), rows, stats)
    assert not problems, problems
