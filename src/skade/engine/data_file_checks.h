// The page checksums of the Parquet data and delete files a scan reads (iceberg/parquet_pages.h),
// checked before DuckDB reads them, once per file for the life of a Database: Iceberg never
// rewrites a data file in place, so a file that passed is not read again while it stays the
// same file (local: same size and modification time; object store: same recorded size).
// The footer schema each check reads is remembered with the file, so a scan learns how each of
// its files stores its columns (names, field ids) without reading the footers again.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/parquet_pages.h"
#include "skade/io/file_io.h"

namespace skade::engine {

// A Parquet file a scan is about to read.
struct DataFileRef {
  std::string location;        // where DuckDB reads it: a local path or an object-store location
  std::string recorded_path;   // the path its manifest records (for messages)
  int64_t recorded_size = -1;  // file_size_in_bytes from the manifest (the identity of an object)
};

struct DataFileCheckOptions {
  io::FileIO* object_store = nullptr;  // reads object-store locations; borrowed, may be null
  // A locked-down database (DatabaseOptions::lock_down) checks only files below these
  // directories or object-store prefixes; DuckDB refuses to read the others itself.
  bool lock_down = false;
  std::vector<std::string> allowed_directories;
};

// A Parquet file's footer schema (shared: the files of a table mostly have the same one).
using FileSchema = std::shared_ptr<const std::vector<iceberg::ParquetSchemaElement>>;

// Thread-safe: scans of several connections check their files at once.
class DataFileChecks {
 public:
  // Files remembered as checked (least recently used forgotten first).
  static constexpr size_t kRemembered = 100'000;
  // Files checked at once by one Check (object stores answer each read after a round trip).
  static constexpr int kParallelFiles = 8;

  explicit DataFileChecks(DataFileCheckOptions options);
  DataFileChecks(const DataFileChecks&) = delete;
  DataFileChecks& operator=(const DataFileChecks&) = delete;

  // Distinct footer schemas remembered, counted in schema elements; a file whose schema would
  // pass the bound is remembered as checked without it.
  static constexpr size_t kSchemaElementsRemembered = 1'000'000;

  // Checks every file not checked before with PageScope::kWhereChecksummed: a file whose first
  // pages carry CRCs has all its pages checked, any other costs a few small reads. kCorruption
  // naming the first damaged file (in the order of `files`) and where in it; kNotFound for a
  // missing file; FileIO errors as they come. Files that fail are not remembered.
  // Returns the footer schema of each file, in the order of `files`: null where it is not known
  // here (a file this database may not read, an encrypted footer, a schema past the bound).
  Result<std::vector<FileSchema>> Check(const std::vector<DataFileRef>& files);

  // Forgets every file checked: the next Check reads them again.
  void Forget();

  // Remembers the files of one scan and returns a marker for its SQL (an SQL comment), so that
  // an error DuckDB raises while a statement containing it runs can be traced to those files
  // (Explain). The last kScansRemembered scans, at most kScanFilesRemembered files in all, are
  // remembered.
  std::string MarkScan(std::vector<DataFileRef> files);
  // Whether `sql` holds a mark MarkScan made.
  static bool HasMark(std::string_view sql);
  // The marks `sql` holds, each as MarkScan made it: for SQL that reads through a view of
  // marked SQL (DuckDB keeps no comment of a view's text), so the statement can carry them.
  static std::string Marks(std::string_view sql);
  static constexpr size_t kScansRemembered = 1024;
  static constexpr size_t kScanFilesRemembered = 100'000;

  // `error`, raised by DuckDB while `sql` ran, with the file it comes from named: DuckDB's
  // Parquet reader names the file in most errors, not in those about a damaged page header.
  // When `sql` holds marks of remembered scans, the error looks like a read error, and its
  // message names none of their files, every page header of those files is read
  // (PageScope::kAll) and the first damaged file's kCorruption is returned with DuckDB's
  // message after it; when none is found damaged, the files are listed after the message.
  // Any other status is returned as it is.
  Status Explain(std::string_view sql, const Status& error);

  struct Counters {
    int64_t files_checked = 0;         // files read by a check
    int64_t files_with_checksums = 0;  // of those, files whose pages carry CRCs (all checked)
    int64_t pages_with_crc = 0;        // pages whose CRC was checked
    int64_t files_remembered = 0;      // files passed over because they were checked before
  };
  Counters counters() const;

 private:
  struct Pending {
    size_t index;  // in the files given to Check
    // The file's identity (location with size, and modification time for a local file); empty
    // when it has none (a failed stat): then it is checked but not remembered.
    std::string key;
  };
  struct Remembered {
    std::list<std::string>::iterator at;  // in order_
    FileSchema schema;
  };
  bool MayRead(const std::string& location) const;
  void RememberLocked(const std::string& key, FileSchema schema);
  // The shared copy of `schema` (null when it is empty or past kSchemaElementsRemembered).
  FileSchema InternLocked(std::vector<iceberg::ParquetSchemaElement> schema);
  // The files of the scans whose marks `sql` holds (each once).
  std::vector<DataFileRef> ScanFiles(std::string_view sql) const;

  const DataFileCheckOptions options_;
  std::vector<std::string> allowed_local_;    // canonical folders (lock_down)
  std::vector<std::string> allowed_objects_;  // object-store prefixes (lock_down)
  const std::unique_ptr<io::FileIO> local_;
  mutable std::mutex mu_;
  std::list<std::string> order_;  // keys, most recently used first
  std::unordered_map<std::string, Remembered> checked_;
  // Distinct schemas by their elements' text, and their elements in all.
  std::unordered_map<std::string, FileSchema> schemas_;
  size_t schema_elements_ = 0;
  Counters counters_;
  // MarkScan: scan number → its files, oldest first.
  std::map<uint64_t, std::vector<DataFileRef>> scans_;
  uint64_t next_scan_ = 1;
  size_t scan_files_ = 0;
};

}  // namespace skade::engine
