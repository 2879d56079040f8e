/* skade.h: a plain C interface to skade for other languages. Results and inputs are Arrow C
 * Data Interface streams (ArrowArrayStream), which Arrow C++, pyarrow, arrow-rs, Polars,
 * DuckDB and nanoarrow import without copying.
 *
 * Conventions of every function below:
 * - It returns 0 (SKADE_OK) on success or a non-zero skade status code (SKADE_E_*); the message
 *   of the last failure on the calling thread is skade_last_error().
 * - Names are "ns.table" (nested namespaces "a.b.table": the last level is the table) and
 *   "ns" / "a.b" for namespaces; they pass the one name validator of every front (no '/', '\',
 *   NUL or control characters, no empty level).
 * - Predicates (`where_sql`) are exactly one boolean SQL expression over the columns, parsed
 *   and re-rendered, never pasted (else SKADE_E_INVALID_ARGUMENT).
 * - An ArrowArrayStream or ArrowSchema passed IN is consumed: the call releases it, also when it
 *   fails (its `release` is NULL afterwards). One passed as `out` is written only on success
 *   and then belongs to the caller, who releases it.
 * - Optional out pointers (int64_t*) may be NULL; they are written only on success.
 * - A skade_lake is safe to use from several threads at once. A stream it returned keeps what
 *   it reads alive: it may be read and released after skade_close of its lake.
 * - Values written convert to the columns' types only exactly (1.5 never becomes the BIGINT
 *   2); a refused value fails the call, which then commits nothing.
 */
#ifndef SKADE_SKADE_H_
#define SKADE_SKADE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowSchema;
struct ArrowArrayStream;

/* The version of the functions below; a binding checks skade_abi_version() against it. */
#define SKADE_ABI_VERSION 2

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

/* Flags of skade_table_drop. */
enum { SKADE_DROP_PURGE = 1 };

typedef struct skade_lake skade_lake;

/* The SKADE_ABI_VERSION the library was built with. */
int skade_abi_version(void);

/* Opens a lake: `warehouse` folder (created if missing) or object-store prefix
 * ("s3://bucket/prefix", configured by the AWS_* environment variables and ~/.aws profiles),
 * and `catalog_uri` (NULL or "" for the SQLite catalog WAREHOUSE/catalog.db, which a warehouse
 * on object storage cannot have; or any catalog URI the CLI's --catalog takes). `*out` is the
 * new lake, released with skade_close. */
int skade_open(const char* warehouse, const char* catalog_uri, skade_lake** out);
/* Releases the lake (NULL is ignored). Streams it returned stay readable until released. */
void skade_close(skade_lake* lake);

/* ---- Namespaces and tables ---- */

/* The namespaces below `parent` (NULL or "" = every namespace of the lake, at any depth),
 * sorted, as a stream of one utf8 column "namespace" (levels joined with '.'). */
int skade_namespaces(skade_lake* lake, const char* parent, struct ArrowArrayStream* out);
/* Creates a namespace (SKADE_E_ALREADY_EXISTS if it exists). */
int skade_namespace_create(skade_lake* lake, const char* ns);
/* Drops an empty namespace (SKADE_E_NOT_FOUND if missing, SKADE_E_CONFLICT if it is not
 * empty, as the catalog says). */
int skade_namespace_drop(skade_lake* lake, const char* ns);
/* The tables of namespace `ns` (NULL or "" = of every namespace), sorted, as a stream of utf8
 * columns "namespace", "name" and "table" ("ns.name"). */
int skade_tables(skade_lake* lake, const char* ns, struct ArrowArrayStream* out);
/* Creates table "ns.table" with the columns of `schema` (a struct schema, consumed; types as
 * DuckDB reads them from Arrow: decimals, nested lists/structs/maps, timestamps with a zone
 * become timestamptz), the first `n_identifier_fields` names of `identifier_fields` as its
 * identifier fields (those columns become required), and `partition_by` (NULL or "" =
 * unpartitioned; else Iceberg transforms as the CLI's --partition-by takes them:
 * "day(ts), bucket(16, id)"). Top-level fields that are not nullable become required columns.
 * SKADE_E_ALREADY_EXISTS, SKADE_E_NOT_FOUND for a missing namespace (as the catalog says),
 * SKADE_E_INVALID_ARGUMENT for a type Iceberg cannot hold. */
int skade_table_create(skade_lake* lake, const char* table, struct ArrowSchema* schema,
                       const char* const* identifier_fields, int64_t n_identifier_fields, const char* partition_by);
/* Drops a table from the catalog; with SKADE_DROP_PURGE its files too (only below its
 * location, which must lie inside the warehouse: else SKADE_E_PERMISSION_DENIED and nothing
 * is dropped). */
int skade_table_drop(skade_lake* lake, const char* table, int flags);
/* The current schema of a table as Arrow (the struct schema of what skade_scan returns) in
 * `out` (caller releases it). */
int skade_table_schema(skade_lake* lake, const char* table, struct ArrowSchema* out);

/* ---- Reads ---- */

/* Reads table "ns.table" (current snapshot) with an optional SQL predicate (NULL = all rows;
 * exactly one boolean expression over the columns, else SKADE_E_INVALID_ARGUMENT) into `out`
 * (caller releases it). */
int skade_scan(skade_lake* lake, const char* table, const char* where_sql, struct ArrowArrayStream* out);
/* skade_scan with more choices: the first `n_columns` names of `columns` (NULL or 0 = every
 * column, in table order), `where_sql` (NULL = all rows), and the snapshot: `snapshot_id`
 * (NULL = current), or the one current at `as_of_ms` (milliseconds since the epoch, NULL =
 * now); giving both is SKADE_E_INVALID_ARGUMENT; an unknown snapshot or a time before the
 * first snapshot SKADE_E_NOT_FOUND. `limit` (NULL = all) caps the rows. */
int skade_read(skade_lake* lake, const char* table, const char* const* columns, int64_t n_columns,
               const char* where_sql, const int64_t* snapshot_id, const int64_t* as_of_ms, const int64_t* limit,
               struct ArrowArrayStream* out);
/* skade_read for a caller that keeps every row (a whole table into one Arrow table or data
 * frame): the call returns once the read has ended, DuckDB having converted the rows to Arrow
 * in its worker threads, in batches of up to 122,880 rows; `out` then hands them over. Same
 * arguments, rows and errors as skade_read, but the rows come in no particular order (an
 * Iceberg table has none; skade_read gives them file by file). Memory holds the whole result
 * until it is read. A snapshot of very many files (more than skade_read reads at once) streams
 * as with skade_read. */
int skade_read_all(skade_lake* lake, const char* table, const char* const* columns, int64_t n_columns,
                   const char* where_sql, const int64_t* snapshot_id, const int64_t* as_of_ms,
                   const int64_t* limit, struct ArrowArrayStream* out);
/* The snapshots of a table, oldest first, as a stream with columns snapshot_id int64,
 * parent_snapshot_id int64 (null for none), sequence_number int64, timestamp_ms int64,
 * operation utf8, current bool, summary map<utf8, utf8>. */
int skade_snapshots(skade_lake* lake, const char* table, struct ArrowArrayStream* out);
/* Runs one SQL statement as `skade sql` does, over the lake's tables (namespaces are schemas:
 * "ns".table, "a.b".table; `t AT (VERSION => id)` and `AT (TIMESTAMP => …)` time travel): a
 * query (SELECT, VALUES, WITH, SHOW, DESCRIBE, EXPLAIN, COPY … TO) streams its rows; an
 * Iceberg write statement (INSERT, UPDATE, DELETE, MERGE, CREATE/DROP TABLE, VIEW or SCHEMA)
 * commits and returns one row: statement utf8, rows int64. Anything else (several statements,
 * USE, SET, ATTACH, COPY FROM, PRAGMA, …) is SKADE_E_INVALID_ARGUMENT. */
int skade_sql(skade_lake* lake, const char* statement, struct ArrowArrayStream* out);

/* ---- Writes: each is one commit; the new snapshot id and commit sequence number go to the
 * optional out pointers (both 0 when nothing was committed, e.g. a delete matching no row). ---- */

/* Appends the rows of `rows` (consumed) to "ns.table". */
int skade_append(skade_lake* lake, const char* table, struct ArrowArrayStream* rows, int64_t* snapshot_id,
                 int64_t* commit_seq);
/* Replaces the rows matching `where_sql` (NULL or "" = every row) with `rows` (consumed),
 * atomically. */
int skade_overwrite(skade_lake* lake, const char* table, struct ArrowArrayStream* rows, const char* where_sql,
                    int64_t* snapshot_id, int64_t* commit_seq);
/* Upserts `rows` (consumed) on the first `n_keys` names of `keys` (NULL or 0 = the table's
 * identifier fields; SKADE_E_INVALID_ARGUMENT when it has none, or for duplicate keys among
 * the rows): rows whose keys exist replace them, the others are added. */
int skade_upsert(skade_lake* lake, const char* table, struct ArrowArrayStream* rows, const char* const* keys,
                 int64_t n_keys, int64_t* snapshot_id, int64_t* commit_seq);
/* Deletes the rows matching `where_sql` (required). */
int skade_delete(skade_lake* lake, const char* table, const char* where_sql, int64_t* snapshot_id,
                 int64_t* commit_seq);

/* ---- Commits ---- */

/* The commit log after `after_commit_seq` (at most `limit` entries) as an Arrow stream with
 * columns commit_seq, table, snapshot_id, operation, added_records, deleted_records,
 * committed_at_us, metadata_location. */
int skade_commit_log(skade_lake* lake, int64_t after_commit_seq, int64_t limit, struct ArrowArrayStream* out);
/* The highest commit_seq of the log (0 when empty) in `*commit_seq`. */
int skade_commit_head(skade_lake* lake, int64_t* commit_seq);
/* Waits until the log holds a commit after `after_commit_seq` — of this process or any other
 * writing to the same catalog — or `timeout_ms` passed (0 = just look), and writes the log's
 * head to `*commit_seq` (equal to or below `after_commit_seq` on a timeout, which is SKADE_OK).
 * SKADE_E_CANCELLED when skade_interrupt woke it. */
int skade_wait_commit(skade_lake* lake, int64_t after_commit_seq, int64_t timeout_ms, int64_t* commit_seq);
/* Interrupts what runs on the lake now, from any thread: the scans and queries being read fail
 * ("Interrupted"), waits return SKADE_E_CANCELLED. Calls started afterwards run normally. */
void skade_interrupt(skade_lake* lake);

/* The message of the calling thread's last failure ("" if none). Valid until the next call. */
const char* skade_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SKADE_SKADE_H_ */
