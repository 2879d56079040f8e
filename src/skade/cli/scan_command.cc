#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <ostream>

#include "skade/cli/commands.h"
#include "skade/cli/lake.h"
#include "skade/cli/messages.h"
#include "skade/cli/output.h"
#include "skade/cli/progress.h"
#include "skade/cli/table_location.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/pushdown_scan.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location_map.h"
#include "skade/io/routing_file_io.h"
#include "skade/table/parted_read.h"

namespace skade::cli {
namespace {

bool ParseDigits(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

int Fail(std::ostream& err, const Status& st) {
  err << ErrorLine(st) << "\n";
  return 1;
}

// The snapshot of a scan as a skade_scan source whose statements read it in parts planned while
// they are read (table/parted_read.h): a --limit then reads a few manifests of a snapshot of
// 100,000 files, not all of them.
class PartedScanSource final : public engine::ScanSource {
 public:
  PartedScanSource(engine::Database& db, table::PartedReadPlan plan) : db_(db), plan_(std::move(plan)) {}
  Result<engine::ScanPlan> Plan(const engine::PushedScan& pushed) override {
    table::PartedReadPlan plan = plan_;
    plan.query.columns = pushed.columns;
    plan.query.where = pushed.filter;
    plan.query.where_checked = false;  // DuckDB's pushed filter, not the checked --where
    engine::ScanPlan out;
    out.parts = std::make_shared<table::PartedRead>(db_, std::move(plan));
    return out;
  }

 private:
  engine::Database& db_;
  const table::PartedReadPlan plan_;  // its filter prunes by --where; DuckDB applies the rest
};

// Whether a scan of `snapshot` is read in parts (table::ReadsInParts), unless it asks for the
// row-lineage columns, which only the whole read gives.
bool ScansInParts(const iceberg::Snapshot& snapshot, const std::vector<std::string>& columns) {
  for (const std::string& c : columns) {
    if (c == engine::kRowIdColumn || c == engine::kLastUpdatedSequenceNumberColumn) return false;
  }
  return table::ReadsInParts(snapshot, table::kPartedReadFiles);
}

// Writes the rows of the query `make_sql` gives in the format asked for; progress on the
// terminal while rows go to a file or a pipe (the SQL is made with it attached: making it reads
// footers and checksums).
int WriteScanRows(const ScanArgs& args, engine::Database& db, const std::function<Result<std::string>()>& make_sql,
                  std::ostream& out, std::ostream& err) {
  std::optional<ProgressReporter> progress;
  if (!::isatty(STDOUT_FILENO)) {
    progress.emplace("scan", err, ProgressReporter::StyleFor(args.lake.quiet));
    Status attached = progress->Attach(db);
    if (!attached.ok()) return Fail(err, attached);
  }
  Result<std::string> sql = make_sql();
  if (!sql.ok()) return Fail(err, sql.status());
  if (args.verbose) err << "skade: sql: " << *sql << "\n";
  BoxOptions box = StdoutBoxOptions();
  if (args.max_rows) box.max_rows = *args.max_rows;
  auto rows = WriteQuery(db, *sql, args.format, box, out);
  if (progress) progress->Done();
  if (!rows.ok()) return Fail(err, rows.status());
  return 0;
}

}  // namespace

std::optional<int64_t> ParseTimestampMillis(const std::string& text) {
  if (text.empty()) return std::nullopt;
  bool all_digits = text.find_first_not_of("0123456789") == std::string::npos;
  if (all_digits) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc()) return std::nullopt;
    return v;
  }
  // YYYY-MM-DD[(T| )HH:MM[:SS[.fff…]]][Z|±HH:MM]
  int y, mo, d, h = 0, mi = 0, s = 0;
  if (text.size() < 10 || text[4] != '-' || text[7] != '-' || !ParseDigits(text.substr(0, 4), &y) ||
      !ParseDigits(text.substr(5, 2), &mo) || !ParseDigits(text.substr(8, 2), &d)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  size_t pos = 10;
  int64_t frac_ms = 0;
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == ' ')) {
    if (text.size() < pos + 6 || text[pos + 3] != ':' || !ParseDigits(text.substr(pos + 1, 2), &h) ||
        !ParseDigits(text.substr(pos + 4, 2), &mi)) {
      return std::nullopt;
    }
    pos += 6;
    if (pos < text.size() && text[pos] == ':') {
      if (text.size() < pos + 3 || !ParseDigits(text.substr(pos + 1, 2), &s)) return std::nullopt;
      pos += 3;
      if (pos < text.size() && text[pos] == '.') {
        ++pos;
        int digits = 0;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
          if (digits < 3) frac_ms = frac_ms * 10 + (text[pos] - '0');
          ++digits;
          ++pos;
        }
        if (digits == 0) return std::nullopt;
        for (int i = digits; i < 3; ++i) frac_ms *= 10;
      }
    }
  }
  int64_t offset_min = 0;
  if (pos < text.size()) {
    if (text[pos] == 'Z' && pos + 1 == text.size()) {
      ++pos;
    } else if ((text[pos] == '+' || text[pos] == '-') && text.size() == pos + 6 && text[pos + 3] == ':') {
      int oh, om;
      if (!ParseDigits(text.substr(pos + 1, 2), &oh) || !ParseDigits(text.substr(pos + 4, 2), &om)) {
        return std::nullopt;
      }
      offset_min = (text[pos] == '+' ? 1 : -1) * (oh * 60 + om);
      pos = text.size();
    } else {
      return std::nullopt;
    }
  }
  if (h > 23 || mi > 59 || s > 60) return std::nullopt;
  int64_t days = iceberg::DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi - offset_min) * 60000 + s * 1000 + frac_ms;
}

namespace {

// Writes the rows of a scan read in parts: a skade_scan source over the snapshot, and one query
// over it with the scan's columns, --where and --limit.
int ScanInParts(const ScanArgs& args, engine::Database& db, io::FileIO& io, const iceberg::TableMetadata& metadata,
                const iceberg::Snapshot& snapshot, engine::IcebergScan scan, const iceberg::ExprPtr& filter,
                const std::optional<engine::Predicate>& where, std::ostream& out, std::ostream& err) {
  engine::ScanSourceInfo info;
  for (const iceberg::NestedField& f : scan.schema->fields()) {
    auto type = engine::DuckTypeName(*f.type);
    if (!type.ok()) return Fail(err, type.status().WithContext("column '" + f.name + "'"));
    info.names.push_back(f.name);
    info.types.push_back(std::move(*type));
  }
  for (const std::string& c : args.columns) {
    if (std::find(info.names.begin(), info.names.end(), c) == info.names.end()) {
      return Fail(err, Status::InvalidArgument("unknown column '" + c + "'"));
    }
  }
  info.estimated_rows = snapshot.SummaryLong("total-records");
  table::PartedReadPlan plan;
  plan.io = &io;
  plan.metadata = &metadata;
  plan.snapshot = &snapshot;
  plan.filter = filter;
  plan.scan = std::move(scan);
  info.source = std::make_shared<PartedScanSource>(db, std::move(plan));
  const std::string token = db.scans().Register(std::move(info));
  std::string projection;
  for (const std::string& c : args.columns) projection += (projection.empty() ? "" : ", ") + engine::QuoteIdentifier(c);
  if (args.count) projection = "count(*)";
  std::string sql = "SELECT " + (projection.empty() ? std::string("*") : projection) + " FROM (" +
                    engine::PushdownScanSql(token) + ") __skade_t";
  if (where) sql += " WHERE " + where->sql();
  if (args.limit && !args.count) sql += " LIMIT " + std::to_string(*args.limit);
  if (args.verbose) err << "skade: reading in parts planned while they are read\n";
  if (args.count) {
    if (args.verbose) err << "skade: sql: " << sql << "\n";
    auto rows = db.QueryRows(sql);
    db.scans().Retire(token);
    if (!rows.ok()) return Fail(err, rows.status());
    if (rows->size() != 1 || !(*rows)[0][0]) return Fail(err, Status::Internal("count returned no row"));
    out << *(*rows)[0][0] << "\n";
    return 0;
  }
  const int written = WriteScanRows(args, db, [&]() -> Result<std::string> { return sql; }, out, err);
  db.scans().Retire(token);
  return written;
}

}  // namespace

int RunScan(const ScanArgs& args, std::ostream& out, std::ostream& err) {
  std::shared_ptr<io::FileIO> local_io = io::MakeEnvironmentFileIO();
  auto path = ResolveTableArgument(args.lake, args.table, local_io);
  if (!path.ok()) {
    err << "skade: " << path.status().ToString() << "\n";
    return 1;
  }
  auto loaded = LoadTable(*local_io, *path, args.relocate);
  if (!loaded.ok()) return Fail(err, loaded.status());
  LoadedTable& t = *loaded;
  for (const std::string& note : t.notes) err << "skade: note: " << note << "\n";
  auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);

  iceberg::SnapshotSelector selector;
  selector.snapshot_id = args.snapshot_id;
  selector.ref = args.ref;
  if (args.as_of) {
    selector.as_of_ms = ParseTimestampMillis(*args.as_of);
    if (!selector.as_of_ms) {
      return Fail(err, Status::InvalidArgument("cannot parse --as-of '" + *args.as_of + "'"));
    }
  }
  auto selected = iceberg::SelectSnapshot(t.metadata, selector);
  if (!selected.ok()) return Fail(err, selected.status());

  engine::DatabaseOptions db_options;
  db_options.object_store = local_io.get();
  auto db = engine::Database::Open(db_options);
  if (!db.ok()) return Fail(err, db.status());

  iceberg::ScanPlanner planner(*table_io, t.metadata);
  const iceberg::Snapshot* snapshot = selected->snapshot;

  // COUNT(*) without a filter and without delete files is the sum of the manifests' record
  // counts: no data file is opened.
  std::optional<engine::Predicate> where;
  if (!args.where.empty()) {
    auto parsed = engine::Predicate::Parse(args.where);
    if (!parsed.ok()) return Fail(err, parsed.status().WithContext("--where"));
    where = std::move(parsed).value();
  }
  if (args.count && !where && snapshot != nullptr) {
    auto counts = planner.CountFromManifests(*snapshot);
    if (!counts.ok()) return Fail(err, counts.status());
    if (counts->delete_files == 0) {
      if (args.verbose) {
        err << "skade: counted from manifest metadata (" << counts->data_files
            << " data files, none opened)\n";
      }
      out << counts->record_count << "\n";
      return 0;
    }
  }

  iceberg::ExprPtr filter;
  if (where) {
    auto f = engine::SqlToIcebergFilter(**db, *where, *selected->schema);
    if (!f.ok()) return Fail(err, f.status().WithContext("--where"));
    filter = *f;
  }

  engine::IcebergScan scan;
  scan.schema = selected->schema;
  scan.name_mapping = t.metadata.DefaultNameMapping();
  scan.specs = t.metadata.partition_specs;
  scan.format_version = t.metadata.format_version;
  scan.locations = t.locations;
  if (args.verbose) scan.note = [&err](const std::string& message) { err << "skade: " << message << "\n"; };
  if (snapshot != nullptr && ScansInParts(*snapshot, args.columns)) {
    return ScanInParts(args, **db, *table_io, t.metadata, *snapshot, std::move(scan), filter, where, out, err);
  }
  if (snapshot != nullptr) {
    auto tasks = planner.PlanAll(*snapshot, *selected->schema, filter);
    if (!tasks.ok()) return Fail(err, tasks.status());
    scan.tasks = std::move(tasks).value();
  }
  if (args.verbose) {
    const auto& s = planner.stats();
    err << "skade: plan: " << s.manifests_total << " manifests (" << s.manifests_skipped
        << " skipped), " << s.data_files_total << " data files (" << s.data_files_skipped
        << " skipped), " << s.delete_files << " delete files"
        << (filter ? ", filter " + filter->ToString() : std::string()) << "\n";
  }

  engine::ScanQuery query;
  query.where = where;
  query.where_checked = where.has_value();  // SqlToIcebergFilter checked it above
  if (args.count) {
    auto n = engine::CountRows(**db, scan, query);
    if (!n.ok()) return Fail(err, n.status());
    out << *n << "\n";
    return 0;
  }
  query.columns = args.columns;
  query.limit = args.limit;
  return WriteScanRows(args, **db, [&] { return engine::BuildScanSql(**db, scan, query); }, out, err);
}

}  // namespace skade::cli
