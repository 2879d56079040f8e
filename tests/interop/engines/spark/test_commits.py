"""Spark's commits in skade's commit log, and Spark and skade writing one table at once."""

import threading
import time

from helpers import assert_same_rows, canon_rows, kinds_of


def test_spark_commits_in_skade_log(spark, skade, ns):
    t = f"{ns}.logged"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, data string) USING iceberg "
              f"PARTITIONED BY (bucket(2, id)) TBLPROPERTIES ('format-version'='2', "
              f"'write.delete.mode'='merge-on-read', 'write.update.mode'='copy-on-write')")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, 'a' FROM range(0, 30)")
    spark.sql(f"INSERT INTO skade.{t} SELECT id, 'b' FROM range(30, 40)")
    spark.sql(f"DELETE FROM skade.{t} WHERE id < 5")
    spark.sql(f"UPDATE skade.{t} SET data = 'u' WHERE id = 35")
    spark.sql(f"ALTER TABLE skade.{t} ADD COLUMN extra int")
    spark.sql(f"INSERT OVERWRITE skade.{t} SELECT id, 'o', 1 FROM range(100, 104)")
    spark.sql(f"CALL skade.system.rewrite_data_files(table => '{t}', "
              f"options => map('rewrite-all', 'true'))").collect()

    snaps = spark.sql(f"SELECT snapshot_id, operation, summary FROM skade.{t}.snapshots "
                      f"ORDER BY committed_at").collect()
    assert [s.operation for s in snaps] == [
        "append", "append", "delete", "overwrite", "overwrite", "replace"]
    entries = skade.log(t)
    seqs = [e["commit_seq"] for e in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    with_snapshot = []
    for e in entries:
        if e.get("snapshot_id") is not None and (not with_snapshot or
                                                 with_snapshot[-1]["snapshot_id"] != e["snapshot_id"]):
            with_snapshot.append(e)
    got = [(e["snapshot_id"], e["operation"], e["added_records"], e["deleted_records"])
           for e in with_snapshot]
    want = [(s.snapshot_id, s.operation, int(s.summary.get("added-records", 0)),
             int(s.summary.get("deleted-records", 0))) for s in snaps]
    assert got == want
    # The DELETE was merge-on-read: a position delete, no data rows removed from files.
    assert int(snaps[2].summary["added-position-deletes"]) == 5


def _spark_rows(spark, t):
    df = spark.sql(f"SELECT id, writer FROM skade.{t}")
    return canon_rows(df.collect(), kinds_of(df.schema))


def test_concurrent_spark_and_skade_appends(spark, skade, ns):
    t = f"{ns}.concurrent"
    spark.sql(f"CREATE TABLE skade.{t} (id bigint, writer string) USING iceberg "
              f"TBLPROPERTIES ('format-version'='2', 'commit.retry.num-retries'='50', "
              f"'commit.retry.min-wait-ms'='5', 'commit.retry.max-wait-ms'='200')")
    batches, batch_rows = 8, 25
    acked, errors = [], []
    lock = threading.Lock()
    spark_done = threading.Event()

    def spark_writer():
        try:
            for b in range(batches):
                lo = 1_000_000 + b * batch_rows
                try:
                    spark.sql(f"INSERT INTO skade.{t} SELECT id, 'spark' FROM range({lo}, {lo + batch_rows})")
                except Exception as e:  # a failed commit is allowed; its rows must then be absent
                    with lock:
                        errors.append(f"spark batch {b}: {str(e)[:300]}")
                    continue
                with lock:
                    acked.extend((i, "spark") for i in range(lo, lo + batch_rows))
        finally:
            spark_done.set()

    def skade_writer(w):
        # Appends for as long as Spark writes (bounded), so that the commits interleave.
        for b in range(30):
            if spark_done.is_set() and b >= 2:
                break
            time.sleep(0.2)  # leave the cores to Spark too
            lo = 2_000_000 + w * 100_000 + b * batch_rows
            p = skade.run("ingest", t, "--sql",
                          f"SELECT range AS id, 'skade' AS writer FROM range({lo}, {lo + batch_rows})",
                          check=False)
            with lock:
                if p.returncode == 0:
                    acked.extend((i, "skade") for i in range(lo, lo + batch_rows))
                else:
                    errors.append(f"skade writer {w} batch {b}: {p.stderr.strip()[:300]}")

    threads = [threading.Thread(target=spark_writer)] + [
        threading.Thread(target=skade_writer, args=(w,)) for w in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not any(th.is_alive() for th in threads), "writers did not finish"
    # Every acknowledged row exactly once, nothing else, in both engines.
    assert_same_rows(_spark_rows(spark, t), acked, "Spark read after concurrent appends")
    assert_same_rows(skade.scan(t, ["id", "writer"]), acked, "skade scan after concurrent appends")
    # Retries absorb the conflicts: every writer's commits went through.
    assert errors == [], errors
    # One log entry per commit, each an append, every snapshot of the table; and the writers'
    # commits did interleave (skade committed between Spark's first and last commit).
    entries = [e for e in skade.log(t) if e.get("snapshot_id")]
    assert len(entries) * batch_rows == len(acked)
    assert {e["operation"] for e in entries} == {"append"}
    snaps = spark.sql(f"SELECT snapshot_id, summary['engine-name'] FROM skade.{t}.snapshots").collect()
    assert {e["snapshot_id"] for e in entries} == {r[0] for r in snaps}
    by_spark = {r[0] for r in snaps if r[1] == "spark"}
    order = ["spark" if e["snapshot_id"] in by_spark else "skade" for e in entries]
    first, last = order.index("spark"), len(order) - 1 - order[::-1].index("spark")
    assert order.count("spark") == batches and "skade" in order[first:last], order
