#include "skade/engine/data_file_checks.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <unordered_set>

#include "skade/base/ordered_parallel.h"
#include "skade/iceberg/parquet_pages.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

// The comment MarkScan puts before a scan's SQL: "/*skade-scan:<n>*/ ".
constexpr std::string_view kMark = "/*skade-scan:";
// Explain reads the pages of at most this many files of a failed statement.
constexpr size_t kMaxExplainedFiles = 1000;

// Whether a DuckDB error message is one a damaged file can cause: its error types of failed
// reads and decoding (the pushdown scan wraps its inner query's error in "IO Error: …"), not
// parser, binder or conversion errors of the statement itself.
bool LooksLikeReadError(std::string_view message) {
  for (std::string_view type : {"IO Error", "Invalid Error", "Invalid Input Error",
                                "Internal Error", "Serialization Error"}) {
    if (message.substr(0, type.size()) == type) return true;
  }
  return false;
}

// The canonical form of a local path (the file actually opened: symlinks and ".." resolved);
// empty when it has none.
std::string Canonical(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? std::string() : p.string();
}

}  // namespace

DataFileChecks::DataFileChecks(DataFileCheckOptions options)
    : options_(std::move(options)), local_(io::MakeLocalFileIO()) {
  if (!options_.lock_down) return;
  for (const std::string& dir : options_.allowed_directories) {
    if (io::IsObjectStoreLocation(dir)) {
      allowed_objects_.push_back(dir);
    } else if (std::string c = Canonical(io::LocalPath(dir)); !c.empty()) {
      allowed_local_.push_back(std::move(c));
    }
  }
}

// Mirrors what DuckDB will let the scan read, so that a check never reads a file the query
// itself may not (a manifest of a hostile table can name any path).
bool DataFileChecks::MayRead(const std::string& location) const {
  if (io::IsObjectStoreLocation(location)) {
    if (options_.object_store == nullptr) return false;  // DuckDB cannot read it either
    if (!options_.lock_down) return true;
    return std::any_of(allowed_objects_.begin(), allowed_objects_.end(),
                       [&](const std::string& prefix) { return io::IsWithin(location, prefix); });
  }
  if (location.find("://") != std::string::npos) return false;  // a scheme no reader here serves
  if (!options_.lock_down) return true;
  const std::string path = Canonical(location);
  if (path.empty()) return false;
  return std::any_of(allowed_local_.begin(), allowed_local_.end(),
                     [&](const std::string& dir) { return io::IsWithin(path, dir); });
}

FileSchema DataFileChecks::InternLocked(std::vector<iceberg::ParquetSchemaElement> schema) {
  if (schema.empty()) return nullptr;
  std::string text;
  for (const iceberg::ParquetSchemaElement& e : schema) {
    text += std::to_string(e.name.size()) + ":" + e.name + "/" + std::to_string(e.num_children) + "/" +
            (e.field_id ? std::to_string(*e.field_id) : "-") + ";";
  }
  if (auto it = schemas_.find(text); it != schemas_.end()) return it->second;
  if (schema_elements_ + schema.size() > kSchemaElementsRemembered) return nullptr;
  schema_elements_ += schema.size();
  auto shared = std::make_shared<const std::vector<iceberg::ParquetSchemaElement>>(std::move(schema));
  schemas_.emplace(std::move(text), shared);
  return shared;
}

void DataFileChecks::RememberLocked(const std::string& key, FileSchema schema) {
  if (checked_.count(key) != 0) return;
  order_.push_front(key);
  checked_.emplace(key, Remembered{order_.begin(), std::move(schema)});
  while (checked_.size() > kRemembered) {
    checked_.erase(order_.back());
    order_.pop_back();
  }
}

Result<std::vector<FileSchema>> DataFileChecks::Check(const std::vector<DataFileRef>& files) {
  // The identity of each file: an object by its recorded size (no request), a local file by
  // size and modification time (one stat; none when the stat fails, and then it is not
  // remembered). Worked out before taking the lock.
  std::vector<Pending> candidates;
  candidates.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const DataFileRef& f = files[i];
    std::string key;
    if (io::IsObjectStoreLocation(f.location)) {
      key = "o\n" + f.location + "\n" + std::to_string(f.recorded_size);
    } else if (struct stat st; ::stat(f.location.c_str(), &st) == 0) {
      key = "l\n" + f.location + "\n" + std::to_string(st.st_size) + "\n" +
            std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    }
    candidates.push_back({i, std::move(key)});
  }
  std::vector<FileSchema> schemas(files.size());
  std::vector<Pending> pending;
  std::vector<std::pair<size_t, size_t>> repeats;  // (index, index of the same file read)
  {
    std::unordered_map<std::string, size_t> seen;  // a file named twice in one scan is read once
    std::lock_guard<std::mutex> lock(mu_);
    for (Pending& c : candidates) {
      if (c.key.empty()) {
        pending.push_back(std::move(c));
        continue;
      }
      if (auto it = checked_.find(c.key); it != checked_.end()) {
        order_.splice(order_.begin(), order_, it->second.at);
        schemas[c.index] = it->second.schema;
        ++counters_.files_remembered;
        continue;
      }
      if (auto [at, added] = seen.emplace(c.key, c.index); !added) {
        repeats.emplace_back(c.index, at->second);
        continue;
      }
      pending.push_back(std::move(c));
    }
  }
  // A file the scan may not read is left to DuckDB, which refuses it.
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [&](const Pending& p) { return !MayRead(files[p.index].location); }),
                pending.end());
  if (pending.empty()) return schemas;

  const int threads = static_cast<int>(std::min<size_t>(pending.size(), kParallelFiles));
  const std::function<Result<iceberg::ParquetPageReport>(size_t)> produce = [&](size_t k) {
    const DataFileRef& f = files[pending[k].index];
    io::FileIO& io = io::IsObjectStoreLocation(f.location) ? *options_.object_store : *local_;
    return iceberg::CheckParquetPages(io, f.location, iceberg::PageScope::kWhereChecksummed);
  };
  const std::function<Status(size_t, Result<iceberg::ParquetPageReport>&)> consume =
      [&](size_t k, Result<iceberg::ParquetPageReport>& report) {
        const DataFileRef& f = files[pending[k].index];
        if (!report.ok()) {
          if (f.recorded_path.empty() || f.recorded_path == f.location) return report.status();
          return report.status().WithContext("data file '" + f.recorded_path + "'");
        }
        std::lock_guard<std::mutex> lock(mu_);
        ++counters_.files_checked;
        if (report->checksummed()) ++counters_.files_with_checksums;
        counters_.pages_with_crc += report->pages_with_crc;
        FileSchema schema = InternLocked(std::move(report->schema));
        schemas[pending[k].index] = schema;
        if (!pending[k].key.empty()) RememberLocked(pending[k].key, std::move(schema));
        return Status::Ok();
      };
  SKADE_RETURN_IF_ERROR(OrderedParallel<Result<iceberg::ParquetPageReport>>(
      pending.size(), threads, static_cast<size_t>(2 * threads), produce, consume));
  for (const auto& [index, same] : repeats) schemas[index] = schemas[same];
  return schemas;
}

void DataFileChecks::Forget() {
  std::lock_guard<std::mutex> lock(mu_);
  checked_.clear();
  order_.clear();
  schemas_.clear();
  schema_elements_ = 0;
}

std::string DataFileChecks::MarkScan(std::vector<DataFileRef> files) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_scan_++;
  if (files.size() > kScanFilesRemembered) files.resize(kScanFilesRemembered);
  scan_files_ += files.size();
  scans_.emplace(id, std::move(files));
  while (scans_.size() > kScansRemembered || scan_files_ > kScanFilesRemembered) {
    scan_files_ -= scans_.begin()->second.size();
    scans_.erase(scans_.begin());
  }
  return std::string(kMark) + std::to_string(id) + "*/ ";
}

bool DataFileChecks::HasMark(std::string_view sql) {
  return sql.find(kMark) != std::string_view::npos;
}

std::string DataFileChecks::Marks(std::string_view sql) {
  std::string out;
  for (size_t at = sql.find(kMark); at != std::string_view::npos; at = sql.find(kMark, at + 1)) {
    size_t i = at + kMark.size();
    while (i < sql.size() && sql[i] >= '0' && sql[i] <= '9') ++i;
    if (i > at + kMark.size() && sql.substr(i, 2) == "*/") out += std::string(sql.substr(at, i + 2 - at)) + " ";
  }
  return out;
}

std::vector<DataFileRef> DataFileChecks::ScanFiles(std::string_view sql) const {
  std::vector<DataFileRef> out;
  std::unordered_set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t at = sql.find(kMark); at != std::string_view::npos; at = sql.find(kMark, at + 1)) {
    uint64_t id = 0;
    size_t i = at + kMark.size();
    for (; i < sql.size() && sql[i] >= '0' && sql[i] <= '9'; ++i)
      id = id * 10 + static_cast<uint64_t>(sql[i] - '0');
    if (sql.substr(i, 2) != "*/") continue;
    auto it = scans_.find(id);
    if (it == scans_.end()) continue;
    for (const DataFileRef& f : it->second) {
      if (seen.insert(f.location).second) out.push_back(f);
    }
  }
  return out;
}

Status DataFileChecks::Explain(std::string_view sql, const Status& error) {
  if (error.ok() || error.code() != StatusCode::kInvalidArgument ||
      !LooksLikeReadError(error.message()) || !HasMark(sql)) {
    return error;
  }
  std::vector<DataFileRef> files = ScanFiles(sql);
  if (files.empty()) return error;
  for (const DataFileRef& f : files) {
    if (error.message().find(f.location) != std::string::npos) return error;  // DuckDB named it
  }
  // Every page header of each file: the one DuckDB could not decode is found by the walk.
  std::vector<const DataFileRef*> readable;
  for (const DataFileRef& f : files) {
    if (readable.size() < kMaxExplainedFiles && MayRead(f.location)) readable.push_back(&f);
  }
  const int threads =
      static_cast<int>(std::min<size_t>(std::max<size_t>(readable.size(), 1), kParallelFiles));
  Status damaged = OrderedParallel<Status>(
      readable.size(), threads, static_cast<size_t>(2 * threads),
      [&](size_t k) {
        const DataFileRef& f = *readable[k];
        io::FileIO& io = io::IsObjectStoreLocation(f.location) ? *options_.object_store : *local_;
        return iceberg::CheckParquetPages(io, f.location, iceberg::PageScope::kAll).status();
      },
      [&](size_t k, Status& status) {
        if (status.code() != StatusCode::kCorruption) return Status::Ok();
        const DataFileRef& f = *readable[k];
        if (f.recorded_path.empty() || f.recorded_path == f.location) return status;
        return status.WithContext("data file '" + f.recorded_path + "'");
      });
  if (!damaged.ok())
    return Status::Corruption(damaged.message() + " (DuckDB: " + error.message() + ")");
  std::string named = " (while reading ";
  named +=
      files.size() == 1 ? "data file" : "one of " + std::to_string(files.size()) + " data files:";
  for (size_t i = 0; i < files.size() && i < 3; ++i) {
    const DataFileRef& f = files[i];
    named += (i ? ", '" : " '") + (f.recorded_path.empty() ? f.location : f.recorded_path) + "'";
  }
  named += files.size() > 3 ? ", …)" : ")";
  return Status::InvalidArgument(error.message() + named);
}

DataFileChecks::Counters DataFileChecks::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace skade::engine
