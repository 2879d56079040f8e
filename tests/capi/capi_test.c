/* Uses skade.h from plain C, as another language's FFI would: open a lake, append an Arrow
 * stream produced by a scan of another table, scan with a filter, read the commit log; then
 * listings, a table made from an Arrow schema, upserts, overwrites, deletes, time travel, SQL,
 * commit waits and drops. The
 * first table is created and filled by the test driver (capi_test.sh) with the skade CLI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skade/arrow/c_data.h"
#include "skade/capi/skade.h"

static int failures = 0;
#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "FAILED %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, skade_last_error()); \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

/* Counts the rows of a stream and releases it. */
static int64_t CountRows(struct ArrowArrayStream* s) {
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray a;
    if (s->get_next(s, &a) != 0) return -1;
    if (a.release == NULL) break;
    rows += a.length;
    a.release(&a);
  }
  s->release(s);
  return rows;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capi_test WAREHOUSE\n");
    return 2;
  }
  skade_lake* lake = NULL;
  CHECK(skade_open(argv[1], NULL, &lake) == SKADE_OK);
  if (lake == NULL) return 1;

  struct ArrowArrayStream all;
  CHECK(skade_scan(lake, "db.src", NULL, &all) == SKADE_OK);
  struct ArrowSchema schema;
  CHECK(all.get_schema(&all, &schema) == 0);
  CHECK(schema.n_children == 2);
  CHECK(strcmp(schema.children[0]->name, "id") == 0);
  schema.release(&schema);
  CHECK(CountRows(&all) == 100);

  /* Copy the rows with id < 10 into db.dst through an Arrow stream. */
  struct ArrowArrayStream some;
  CHECK(skade_scan(lake, "db.src", "id < 10", &some) == SKADE_OK);
  int64_t snapshot_id = 0, commit_seq = 0;
  CHECK(skade_append(lake, "db.dst", &some, &snapshot_id, &commit_seq) == SKADE_OK);
  CHECK(snapshot_id > 0);
  CHECK(commit_seq == 4); /* create src, append src, create dst, append dst */

  struct ArrowArrayStream dst;
  CHECK(skade_scan(lake, "db.dst", NULL, &dst) == SKADE_OK);
  CHECK(CountRows(&dst) == 10);

  struct ArrowArrayStream log;
  CHECK(skade_commit_log(lake, 2, 100, &log) == SKADE_OK);
  CHECK(CountRows(&log) == 2);

  /* Errors come back as codes with a message. */
  struct ArrowArrayStream none;
  CHECK(skade_scan(lake, "db.missing", NULL, &none) == SKADE_E_NOT_FOUND);
  CHECK(strstr(skade_last_error(), "missing") != NULL);
  CHECK(skade_scan(lake, "db.src", "id = = 1", &none) == SKADE_E_INVALID_ARGUMENT);

  /* The name and predicate rules of every front hold here too: a name that is not one path
   * component, and a predicate that would break out of its parentheses, are refused. */
  CHECK(skade_scan(lake, "db.a/b", NULL, &none) == SKADE_E_INVALID_ARGUMENT);
  CHECK(skade_scan(lake, "db.src", "id=-1) OR (1=1", &none) == SKADE_E_INVALID_ARGUMENT);
  struct ArrowArrayStream rows;
  CHECK(skade_scan(lake, "db.src", "id < 3", &rows) == SKADE_OK);
  CHECK(skade_append(lake, "db.x\tb", &rows, NULL, NULL) == SKADE_E_INVALID_ARGUMENT);
  CHECK(rows.release == NULL); /* consumed either way */
  struct ArrowArrayStream after;
  CHECK(skade_scan(lake, "db.dst", NULL, &after) == SKADE_OK);
  CHECK(CountRows(&after) == 10);

  /* ---- The rest of the interface (ABI version 2). ---- */
  CHECK(skade_abi_version() == SKADE_ABI_VERSION);
  struct ArrowArrayStream list;
  CHECK(skade_namespaces(lake, NULL, &list) == SKADE_OK);
  CHECK(CountRows(&list) == 1);
  CHECK(skade_namespace_create(lake, "db") == SKADE_E_ALREADY_EXISTS);
  CHECK(skade_namespace_create(lake, "a\nb") == SKADE_E_INVALID_ARGUMENT);
  CHECK(skade_tables(lake, "db", &list) == SKADE_OK);
  CHECK(CountRows(&list) == 2);

  /* A table made from the Arrow schema of a scan, keyed on id; upserts replace by key. */
  struct ArrowArrayStream probe;
  CHECK(skade_scan(lake, "db.src", NULL, &probe) == SKADE_OK);
  struct ArrowSchema src_schema;
  CHECK(probe.get_schema(&probe, &src_schema) == 0);
  probe.release(&probe);
  const char* keys[] = {"id"};
  CHECK(skade_table_create(lake, "db.keyed", &src_schema, keys, 1, "bucket(4, id)") == SKADE_OK);
  CHECK(src_schema.release == NULL); /* consumed */
  for (int round = 0; round < 2; ++round) {
    struct ArrowArrayStream five;
    CHECK(skade_scan(lake, "db.src", "id < 5", &five) == SKADE_OK);
    int64_t upsert_snapshot = 0;
    CHECK(skade_upsert(lake, "db.keyed", &five, NULL, 0, &upsert_snapshot, NULL) == SKADE_OK);
    CHECK(upsert_snapshot > 0);
    struct ArrowArrayStream keyed;
    CHECK(skade_scan(lake, "db.keyed", NULL, &keyed) == SKADE_OK);
    CHECK(CountRows(&keyed) == 5);
  }
  struct ArrowSchema keyed_schema;
  CHECK(skade_table_schema(lake, "db.keyed", &keyed_schema) == SKADE_OK);
  CHECK(keyed_schema.n_children == 2);
  keyed_schema.release(&keyed_schema);

  /* Columns, limit and time travel. */
  const char* name_only[] = {"name"};
  int64_t three = 3;
  struct ArrowArrayStream names;
  CHECK(skade_read(lake, "db.src", name_only, 1, "id >= 50", NULL, NULL, &three, &names) == SKADE_OK);
  struct ArrowSchema names_schema;
  CHECK(names.get_schema(&names, &names_schema) == 0);
  CHECK(names_schema.n_children == 1 && strcmp(names_schema.children[0]->name, "name") == 0);
  names_schema.release(&names_schema);
  CHECK(CountRows(&names) == 3);
  const char* unknown[] = {"nope"};
  CHECK(skade_read(lake, "db.src", unknown, 1, NULL, NULL, NULL, NULL, &names) != SKADE_OK);
  /* The same read, collected whole before it returns: same columns and rows, same refusals. */
  CHECK(skade_read_all(lake, "db.src", name_only, 1, "id >= 50", NULL, NULL, &three, &names) == SKADE_OK);
  CHECK(names.get_schema(&names, &names_schema) == 0);
  CHECK(names_schema.n_children == 1 && strcmp(names_schema.children[0]->name, "name") == 0);
  names_schema.release(&names_schema);
  CHECK(CountRows(&names) == 3);
  CHECK(skade_read_all(lake, "db.src", NULL, 0, "id < 10", NULL, NULL, NULL, &names) == SKADE_OK);
  CHECK(CountRows(&names) == 10);
  CHECK(skade_read_all(lake, "db.src", unknown, 1, NULL, NULL, NULL, NULL, &names) != SKADE_OK);
  CHECK(skade_read_all(lake, "db.src", NULL, 0, "id <", NULL, NULL, NULL, &names) == SKADE_E_INVALID_ARGUMENT);

  /* Overwrite the rows with id < 5 by two rows, delete one, delete nothing. */
  struct ArrowArrayStream two;
  CHECK(skade_scan(lake, "db.src", "id < 2", &two) == SKADE_OK);
  CHECK(skade_overwrite(lake, "db.dst", &two, "id < 5", NULL, NULL) == SKADE_OK);
  CHECK(skade_scan(lake, "db.dst", NULL, &after) == SKADE_OK);
  CHECK(CountRows(&after) == 7);
  int64_t deleted_snapshot = 0, deleted_seq = 0;
  CHECK(skade_delete(lake, "db.dst", "id = 9", &deleted_snapshot, &deleted_seq) == SKADE_OK);
  CHECK(deleted_snapshot > 0 && deleted_seq > commit_seq);
  CHECK(skade_delete(lake, "db.dst", "id = 12345", &deleted_snapshot, &deleted_seq) == SKADE_OK);
  CHECK(deleted_snapshot == 0 && deleted_seq == 0); /* nothing to commit */
  CHECK(skade_delete(lake, "db.dst", NULL, NULL, NULL) == SKADE_E_INVALID_ARGUMENT);
  struct ArrowArrayStream old;
  CHECK(skade_read(lake, "db.dst", NULL, 0, NULL, &snapshot_id, NULL, NULL, &old) == SKADE_OK);
  CHECK(CountRows(&old) == 10); /* the first append's snapshot */
  CHECK(skade_snapshots(lake, "db.dst", &list) == SKADE_OK);
  CHECK(CountRows(&list) == 3); /* append, overwrite, delete */

  /* SQL: a query streams, a write statement commits, other statements are refused. */
  struct ArrowArrayStream q;
  CHECK(skade_sql(lake, "SELECT count(*) AS n FROM db.src WHERE id < 10", &q) == SKADE_OK);
  CHECK(CountRows(&q) == 1);
  CHECK(skade_sql(lake, "INSERT INTO db.dst VALUES (77, 'x')", &q) == SKADE_OK);
  CHECK(CountRows(&q) == 1);
  CHECK(skade_sql(lake, "ATTACH 'other.db'", &q) == SKADE_E_INVALID_ARGUMENT);
  CHECK(skade_sql(lake, "SELECT 1; SELECT 2", &q) == SKADE_E_INVALID_ARGUMENT);

  /* The commit log's head, and waits: one that is satisfied at once, one that times out. */
  int64_t head = 0, seen = -1;
  CHECK(skade_commit_head(lake, &head) == SKADE_OK);
  CHECK(head > deleted_seq);
  CHECK(skade_wait_commit(lake, head - 1, 10000, &seen) == SKADE_OK);
  CHECK(seen == head);
  CHECK(skade_wait_commit(lake, head, 30, &seen) == SKADE_OK);
  CHECK(seen == head);

  /* Drops; a stream outlives its lake. */
  CHECK(skade_table_drop(lake, "db.keyed", SKADE_DROP_PURGE) == SKADE_OK);
  CHECK(skade_scan(lake, "db.keyed", NULL, &none) == SKADE_E_NOT_FOUND);
  CHECK(skade_table_drop(lake, "db.keyed", 0) == SKADE_E_NOT_FOUND);
  CHECK(skade_namespace_drop(lake, "nope") == SKADE_E_NOT_FOUND);
  struct ArrowArrayStream late;
  CHECK(skade_scan(lake, "db.src", NULL, &late) == SKADE_OK);

  skade_close(lake);
  CHECK(CountRows(&late) == 100);
  if (failures == 0) printf("capi_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
