// Shared helpers of the events tests: a catalog in a temp dir (SQLite) or a throwaway
// PostgreSQL database, trivial commits, and a child process that commits.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"

namespace skade::events::testing {

// Creates namespace `db` (if missing) and table db.<name> with a one-column schema.
Status CreateTable(catalog::Catalog& catalog, const std::string& name);
// One commit on db.<table> that sets property k=<value> (retried on kConflict).
Result<int64_t> PropertyCommit(catalog::Catalog& catalog, const std::string& table,
                               const std::string& value);

// Re-executes this test binary as a child that runs only the test `test_filter` (a gtest
// filter such as "Suite.Case"), with `extra_env` ("NAME=value") added to this environment.
pid_t SpawnThisBinary(const std::string& test_filter, const std::vector<std::string>& extra_env);
// Re-executes this test binary as a child that opens `uri` and makes `count` property commits
// on db.<table> (or commits for `seconds` when count is 0), then exits 0.
pid_t SpawnCommitter(const std::string& uri, const std::string& warehouse,
                     const std::string& table, int count, double seconds);
// Waits for `pid` up to `timeout_s`; its exit code, or -1 (killed on timeout).
int WaitChild(pid_t pid, double timeout_s);

}  // namespace skade::events::testing
