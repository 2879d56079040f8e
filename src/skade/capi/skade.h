/* skade.h: a plain C interface to skade for other languages. Results and inputs are Arrow C
 * Data Interface streams (ArrowArrayStream), which Arrow C++, pyarrow, arrow-rs, Polars,
 * DuckDB and nanoarrow import without copying.
 *
 * Every function returns 0 on success or a non-zero skade status code (SKADE_E_*); the
 * message of the last failure on the calling thread is skade_last_error(). A skade_lake is
 * safe to use from several threads.
 */
#ifndef SKADE_SKADE_H_
#define SKADE_SKADE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowArrayStream;

enum {
  SKADE_OK = 0,
  SKADE_E_INVALID_ARGUMENT = 1,
  SKADE_E_NOT_FOUND = 2,
  SKADE_E_ALREADY_EXISTS = 3,
  SKADE_E_CONFLICT = 4,
  SKADE_E_COMMIT_UNKNOWN = 5,
  SKADE_E_NOT_IMPLEMENTED = 6,
  SKADE_E_UNAUTHORIZED = 7,
  SKADE_E_IO = 8,
  SKADE_E_CORRUPTION = 9,
  SKADE_E_UNAVAILABLE = 10,
  SKADE_E_INTERNAL = 11,
  SKADE_E_PERMISSION_DENIED = 12,
  SKADE_E_RESOURCE_EXHAUSTED = 13,
  SKADE_E_CANCELLED = 14
};

typedef struct skade_lake skade_lake;

/* Opens a lake: `warehouse` folder (created if missing) or object-store prefix
 * ("s3://bucket/prefix", configured by the AWS_* environment variables and ~/.aws profiles),
 * and `catalog_uri` (NULL or "" for the SQLite catalog WAREHOUSE/catalog.db, which a warehouse
 * on object storage cannot have; or any catalog URI the CLI's --catalog takes). */
int skade_open(const char* warehouse, const char* catalog_uri, skade_lake** out);
void skade_close(skade_lake* lake);

/* Reads table "ns.table" (current snapshot) with an optional SQL predicate (NULL = all rows;
 * exactly one boolean expression over the columns, else SKADE_E_INVALID_ARGUMENT) into `out`
 * (caller releases it). */
int skade_scan(skade_lake* lake, const char* table, const char* where_sql, struct ArrowArrayStream* out);

/* Appends the rows of `rows` (consumed, also when the call fails) to "ns.table" in one commit;
 * the new snapshot id and commit sequence number are written to the optional out pointers.
 * Values convert to the columns' types only exactly. */
int skade_append(skade_lake* lake, const char* table, struct ArrowArrayStream* rows, int64_t* snapshot_id,
                 int64_t* commit_seq);

/* The commit log after `after_commit_seq` (at most `limit` entries) as an Arrow stream with
 * columns commit_seq, table, snapshot_id, operation, added_records, deleted_records,
 * committed_at_us, metadata_location. */
int skade_commit_log(skade_lake* lake, int64_t after_commit_seq, int64_t limit, struct ArrowArrayStream* out);

/* The message of the calling thread's last failure ("" if none). Valid until the next call. */
const char* skade_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SKADE_SKADE_H_ */
