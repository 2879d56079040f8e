/* Uses skade.h from plain C, as another language's FFI would: open a lake, append an Arrow
 * stream produced by a scan of another table, scan with a filter, read the commit log. The
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

  skade_close(lake);
  if (failures == 0) printf("capi_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
