"""Trino's commits in skade's commit log, skade's commits in Trino's snapshot tables, and Trino
and skade appending to one table at once."""

import threading

from helpers import assert_same_rows, canon_rows


def trino_snapshots(trino, schema, name):
    r = trino.query(f'SELECT snapshot_id, parent_id, operation, summary FROM {schema}."{name}$snapshots" '
                    f"ORDER BY committed_at, snapshot_id")
    return [tuple(row) for row in r.rows]


def with_new_snapshot(entries):
    """The log entries that moved the table to a new snapshot (schema changes, properties and
    statistics files are commits of their own that keep the snapshot)."""
    out = []
    for e in entries:
        if e.get("snapshot_id") is not None and (not out or out[-1]["snapshot_id"] != e["snapshot_id"]):
            out.append(e)
    return out


def test_trino_commits_in_skade_log(trino, skade, ns):
    t = f"{ns}.logged"
    trino.query(f"CREATE TABLE {t} (id bigint, data varchar) WITH (partitioning = ARRAY['bucket(id, 2)'])")
    trino.query(f"INSERT INTO {t} SELECT x, 'a' FROM UNNEST(sequence(0, 29)) AS r(x)")
    trino.query(f"INSERT INTO {t} SELECT x, 'b' FROM UNNEST(sequence(30, 39)) AS r(x)")
    trino.query(f"DELETE FROM {t} WHERE id < 5")
    trino.query(f"UPDATE {t} SET data = 'u' WHERE id = 35")
    trino.query(f"ALTER TABLE {t} ADD COLUMN extra integer")
    trino.query(f"ALTER TABLE {t} EXECUTE optimize")

    snaps = trino_snapshots(trino, ns, "logged")
    # CREATE TABLE commits an empty append (Trino's table starts with a snapshot).
    assert [s[2] for s in snaps] == ["append", "append", "append", "delete", "overwrite", "replace"]
    entries = skade.log(t)
    seqs = [e["commit_seq"] for e in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # Trino creates through a staged create that its first commit completes; skade logs that
    # commit as the table's registration.
    assert entries[0]["operation"] in ("create", "register"), entries[0]
    got = [(e["snapshot_id"], e["operation"] if i else "append", e["added_records"],
            e["deleted_records"]) for i, e in enumerate(with_new_snapshot(entries))]
    want = [(s[0], s[2], int(s[3].get("added-records", 0)), int(s[3].get("deleted-records", 0)))
            for s in snaps]
    assert got == want
    # The DELETE was merge-on-read: a position delete file, no data rows removed from files.
    assert int(snaps[3][3]["added-position-deletes"]) == 5
    # The last commit in the log is the table's current metadata (the log keeps the location as
    # committed, file://…; inspect shows the local path).
    logged = entries[-1]["metadata_location"]
    assert logged.startswith("file:///")
    assert logged[len("file://"):] == skade.json("inspect", t, "--json")["metadata_file"]


def test_skade_commits_in_trino_snapshots(trino, skade):
    skade.run("ns", "create", "committed")
    t = "committed.events"
    skade.run("create", t, "--schema", "id BIGINT, data VARCHAR", "--partition-by", "bucket(4, id)",
              "--prop", "format-version=2", "--prop", "write.delete.mode=merge-on-read")
    skade.run("ingest", t, "--sql", "SELECT i::BIGINT AS id, 'a' AS data FROM range(0, 20) r(i)")
    skade.run("ingest", t, "--sql", "SELECT i::BIGINT AS id, 'b' AS data FROM range(20, 30) r(i)")
    skade.run("delete", t, "--where", "id % 3 = 0")
    skade.run("ingest", t, "--mode", "overwrite", "--where", "id >= 25", "--sql",
              "SELECT 100::BIGINT AS id, 'o' AS data")
    entries = with_new_snapshot(skade.log(t))
    snaps = trino_snapshots(trino, "committed", "events")
    assert [s[0] for s in snaps] == [e["snapshot_id"] for e in entries]
    assert [s[2] for s in snaps] == [e["operation"] for e in entries]
    # Each snapshot's parent is the one before.
    assert [s[1] for s in snaps[1:]] == [s[0] for s in snaps[:-1]]
    history = trino.query('SELECT snapshot_id, is_current_ancestor FROM committed."events$history" '
                          "ORDER BY made_current_at").rows
    assert [h[0] for h in history] == [s[0] for s in snaps] and all(h[1] for h in history)
    rows = trino.query(f"SELECT id, data FROM {t}")
    assert_same_rows(canon_rows(rows.rows, rows.types, "trino"),
                     canon_rows(skade.scan(t, ["id", "data"]), rows.types, "skade"), "Trino vs skade")


def test_concurrent_trino_and_skade_appends(trino, skade, ns):
    t = f"{ns}.concurrent"
    trino.query(f"CREATE TABLE {t} (id bigint, writer varchar)")
    batches, rows_per_batch = 6, 10
    errors = []

    def trino_writer():
        try:
            for b in range(batches):
                lo = b * rows_per_batch
                trino.query(f"INSERT INTO {t} SELECT x, 'trino' FROM "
                            f"UNNEST(sequence({lo}, {lo + rows_per_batch - 1})) AS r(x)")
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    writer = threading.Thread(target=trino_writer)
    writer.start()
    for b in range(batches):
        lo = 1000 + b * rows_per_batch
        skade.run("ingest", t, "--sql",
                  f"SELECT i::BIGINT AS id, 'skade' AS writer FROM range({lo}, {lo + rows_per_batch}) r(i)")
    writer.join(timeout=300)
    assert not writer.is_alive() and not errors, errors
    r = trino.query(f"SELECT id, writer FROM {t}")
    expected = [(i, "trino") for i in range(batches * rows_per_batch)] + \
               [(1000 + i, "skade") for i in range(batches * rows_per_batch)]
    assert_same_rows(canon_rows(r.rows, r.types, "trino"), expected, "Trino's rows")
    assert_same_rows(canon_rows(skade.scan(t, ["id", "writer"]), r.types, "skade"), expected,
                     "skade's rows")
    appends = [e for e in skade.log(t) if e["operation"] == "append"]
    assert sum(e["added_records"] for e in appends) == 2 * batches * rows_per_batch
