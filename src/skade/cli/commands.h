// The `skade` subcommands' entry points. Each returns a process exit code and writes results
// to `out` and diagnostics to `err`.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace skade::cli {

enum class OutputFormat { kTable, kCsv, kJson };

// The global options: where the lake is, and how chatty to be.
struct LakeArgs {
  std::string warehouse;    // --warehouse, else $SKADE_WAREHOUSE, else ./lake
  std::string catalog_uri;  // --catalog, else sqlite://<warehouse>/catalog.db
  bool quiet = false;       // --quiet: no progress on stderr
  // A catalog without a commit log (Nessie, a folder of tables, a foreign SQL database, a REST
  // server without a change feed) is polled this often for commit events; its polled log
  // lives at poll_state (default catalog::DefaultPolledLogPath).
  double poll_interval_s = 2;
  std::string poll_state;
};

struct ScanArgs {
  LakeArgs lake;      // used when `table` is a catalog name (ns.table) rather than a path
  std::string table;
  std::optional<int64_t> snapshot_id;
  std::optional<std::string> ref;
  std::optional<std::string> as_of;  // epoch ms or ISO-8601 timestamp (UTC unless offset)
  std::vector<std::string> columns;
  std::string where;
  std::optional<int64_t> limit;
  std::optional<int64_t> max_rows;  // rows the table format shows (default 40; 0 = all)
  bool count = false;
  bool verbose = false;
  OutputFormat format = OutputFormat::kTable;
  std::vector<std::pair<std::string, std::string>> relocate;
};

struct InspectArgs {
  LakeArgs lake;
  std::string table;
  bool json = false;
  std::optional<int64_t> snapshot_id;  // manifests/files of this snapshot (default current)
  std::vector<std::pair<std::string, std::string>> relocate;
  // Check the page checksums of the snapshot's live Parquet files (every page of a file that
  // carries CRCs is read); say which files carry none.
  bool check_pages = true;
};

int RunScan(const ScanArgs& args, std::ostream& out, std::ostream& err);
int RunInspect(const InspectArgs& args, std::ostream& out, std::ostream& err);

// Parses "--as-of" text: integer epoch milliseconds, or "YYYY-MM-DD[ T]HH:MM[:SS[.fff]][Z|±HH:MM]"
// (UTC when no offset). nullopt when malformed.
std::optional<int64_t> ParseTimestampMillis(const std::string& text);

}  // namespace skade::cli
