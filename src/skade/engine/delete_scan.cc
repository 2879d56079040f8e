#include "skade/engine/delete_scan_internal.h"

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/catalog/catalog_entry/table_function_catalog_entry.hpp"
#include "duckdb/common/multi_file/multi_file_reader.hpp"
#include "duckdb/common/multi_file/multi_file_states.hpp"
#include "duckdb/parallel/task_scheduler.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "skade/engine/delete_bitmaps_internal.h"

namespace skade::engine {
namespace {

constexpr const char* kName = "skade_read_parquet";

struct ScanInfo : duckdb::TableFunctionInfo {
  explicit ScanInfo(DeleteAccess a) : access(std::move(a)) {}
  DeleteAccess access;
};

// Drops the rows of one data file its bitmap holds. The Parquet reader calls it for each run
// of rows it decodes, from several threads at once: it keeps no state between calls.
class BitmapFilter final : public duckdb::DeleteFilter {
 public:
  explicit BitmapFilter(DeletionVectorPtr vector) : vector_(std::move(vector)) {}

  duckdb::idx_t Filter(duckdb::row_t start, duckdb::idx_t count, duckdb::SelectionVector& kept) override {
    kept.Initialize(std::max<duckdb::idx_t>(count, STANDARD_VECTOR_SIZE));
    iceberg::DeletionVector::Prober prober(*vector_);
    duckdb::idx_t n = 0;
    for (duckdb::idx_t i = 0; i < count; ++i) {
      kept.set_index(n, i);
      n += prober.Contains(start + static_cast<int64_t>(i)) ? 0 : 1;
    }
    return n;
  }

 private:
  DeletionVectorPtr vector_;
};

std::vector<std::string> Strings(const duckdb::Value& list) {
  std::vector<std::string> out;
  if (list.IsNull()) return out;
  for (const duckdb::Value& v : duckdb::ListValue::GetChildren(list)) {
    if (v.IsNull()) throw duckdb::InvalidInputException("%s: a delete list holds a NULL", kName);
    out.push_back(duckdb::StringValue::Get(v));
  }
  return out;
}

std::vector<int64_t> Longs(const duckdb::Value& list) {
  std::vector<int64_t> out;
  if (list.IsNull()) return out;
  for (const duckdb::Value& v : duckdb::ListValue::GetChildren(list)) {
    if (v.IsNull()) throw duckdb::InvalidInputException("%s: a delete list holds a NULL", kName);
    out.push_back(duckdb::BigIntValue::Get(v));
  }
  return out;
}

std::vector<std::vector<int64_t>> LongLists(const duckdb::Value& list) {
  std::vector<std::vector<int64_t>> out;
  if (list.IsNull()) return out;
  for (const duckdb::Value& v : duckdb::ListValue::GetChildren(list)) out.push_back(Longs(v));
  return out;
}

// The multi-file reader of one skade_read_parquet call: read_parquet's, which also parses the
// delete parameters, loads their bitmaps when the call binds and hands each file's bitmap to
// its reader. Copies (DuckDB copies bind data while planning) share the loaded bitmaps.
class DeletingReader final : public duckdb::MultiFileReader {
 public:
  explicit DeletingReader(duckdb::shared_ptr<duckdb::TableFunctionInfo> info) : info_(std::move(info)) {
    function_name = kName;
  }

  bool ParseOption(const std::string& key, const duckdb::Value& value, duckdb::MultiFileOptions& options,
                   duckdb::ClientContext& context) override {
    if (key == "position_delete_files") {
      positions_.files = Strings(value);
    } else if (key == "position_data_paths") {
      positions_.data_paths = Strings(value);
    } else if (key == "position_data_locations") {
      positions_.data_locations = Strings(value);
    } else if (key == "position_data_deletes") {
      positions_.data_deletes = LongLists(value);
    } else if (key == "vector_puffins") {
      vectors_.puffins = Strings(value);
    } else if (key == "vector_offsets") {
      vectors_.offsets = Longs(value);
    } else if (key == "vector_lengths") {
      vectors_.lengths = Longs(value);
    } else if (key == "vector_data_paths") {
      vectors_.data_paths = Strings(value);
    } else if (key == "vector_row_counts") {
      vectors_.row_counts = Longs(value);
    } else {
      return duckdb::MultiFileReader::ParseOption(key, value, options, context);
    }
    return true;
  }

  // Called once per bind, after the options: loads the bitmaps, then binds as read_parquet.
  // Every data file the deletes name must be one of the files read, spelt the same way: a
  // bitmap no reader would take means rows that should be gone, so it is an error.
  bool Bind(duckdb::MultiFileOptions& options, duckdb::MultiFileList& files,
            duckdb::vector<duckdb::LogicalType>& return_types, duckdb::vector<std::string>& names,
            duckdb::MultiFileReaderBindData& bind_data) override {
    Load();
    if (by_path_ != nullptr) {
      std::unordered_set<std::string> read;
      for (const duckdb::OpenFileInfo& file : files.GetAllFiles()) read.insert(file.path);
      for (const auto& [path, vector] : *by_path_) {
        if (!read.count(path)) {
          throw duckdb::InvalidInputException("%s: the deletes name '%s', which is not one of the files read", kName,
                                              path);
        }
      }
    }
    return duckdb::MultiFileReader::Bind(options, files, return_types, names, bind_data);
  }

  void FinalizeBind(duckdb::MultiFileReaderData& reader_data, const duckdb::MultiFileOptions& file_options,
                    const duckdb::MultiFileReaderBindData& options,
                    const duckdb::vector<duckdb::MultiFileColumnDefinition>& global_columns,
                    const duckdb::vector<duckdb::ColumnIndex>& global_column_ids, duckdb::ClientContext& context,
                    duckdb::optional_ptr<duckdb::MultiFileReaderGlobalState> global_state) override {
    duckdb::MultiFileReader::FinalizeBind(reader_data, file_options, options, global_columns, global_column_ids,
                                          context, global_state);
    if (by_path_ == nullptr) {
      // Never read without the deletes asked for.
      if (!positions_.files.empty() || !vectors_.puffins.empty()) {
        throw duckdb::InternalException("%s: deletes were not loaded before the scan", kName);
      }
      return;
    }
    auto it = by_path_->find(reader_data.reader->file.path);
    if (it != by_path_->end()) reader_data.reader->deletion_filter = duckdb::make_uniq<BitmapFilter>(it->second);
  }

  duckdb::unique_ptr<duckdb::MultiFileReader> Copy() const override {
    return duckdb::make_uniq<DeletingReader>(*this);
  }

 private:
  using ByPath = std::unordered_map<std::string, DeletionVectorPtr>;

  void Load() {
    if (positions_.files.empty() && positions_.data_paths.empty() && vectors_.puffins.empty()) return;
    auto by_path = std::make_shared<ByPath>();
    auto add = [&](const Result<DeleteBitmaps>& loaded) {
      if (!loaded.ok()) throw duckdb::InvalidInputException(loaded.status().message());
      for (size_t i = 0; i < loaded->data_paths.size(); ++i) {
        DeletionVectorPtr& slot = (*by_path)[loaded->data_paths[i]];
        // Both kinds name this file: one bitmap of both.
        slot = slot == nullptr ? loaded->vectors[i] : UnionOf({slot, loaded->vectors[i]});
      }
    };
    const DeleteAccess& access = static_cast<const ScanInfo&>(*info_).access;
    add(LoadPositionBitmaps(access, positions_, kName));
    add(LoadVectorBitmaps(access, vectors_, kName));
    by_path_ = std::move(by_path);
  }

  duckdb::shared_ptr<duckdb::TableFunctionInfo> info_;  // a ScanInfo
  PositionDeleteRequest positions_;
  VectorRequest vectors_;
  std::shared_ptr<const ByPath> by_path_;  // set by Bind when deletes were asked for
};

duckdb::unique_ptr<duckdb::MultiFileReader> CreateReader(const duckdb::TableFunction& function) {
  return duckdb::make_uniq<DeletingReader>(function.function_info);
}

// read_parquet's global state set-up (the same function for each of its overloads).
std::atomic<duckdb::table_function_init_global_t> parquet_init_global{nullptr};

// read_parquet's global state, on as many threads as a read of several files gets. DuckDB 1.4
// caps a one-file read at the row groups its bind counted in that file's footer; with a
// `schema` (skade's field-id map, on every read) the bind reads no footer, so the cap is one
// thread and a file of many row groups was read on one core. The scan hands out row groups to
// whichever threads ask, so a file with fewer row groups than threads leaves the rest idle.
duckdb::unique_ptr<duckdb::GlobalTableFunctionState> InitGlobal(duckdb::ClientContext& context,
                                                                duckdb::TableFunctionInitInput& input) {
  duckdb::unique_ptr<duckdb::GlobalTableFunctionState> state = parquet_init_global.load()(context, input);
  auto& files = state->Cast<duckdb::MultiFileGlobalState>();
  const auto threads = static_cast<duckdb::idx_t>(duckdb::TaskScheduler::GetScheduler(context).NumberOfThreads());
  if (files.max_threads < threads) files.max_threads = threads;
  return state;
}

}  // namespace

Status RegisterDeleteScanFunction(duckdb_database db, const DatabaseOptions& options) {
  try {
    auto* wrapper = reinterpret_cast<duckdb::DatabaseWrapper*>(db);
    duckdb::DatabaseInstance& instance = *wrapper->database->instance;
    duckdb::ExtensionLoader loader(instance, "skade");
    auto& parquet = loader.GetTableFunction("read_parquet");
    auto info = duckdb::make_shared_ptr<ScanInfo>(DeleteAccess::From(db, options));
    const auto strings = duckdb::LogicalType::LIST(duckdb::LogicalType::VARCHAR);
    const auto longs = duckdb::LogicalType::LIST(duckdb::LogicalType::BIGINT);
    duckdb::TableFunctionSet set(kName);
    for (duckdb::TableFunction function : parquet.functions.functions) {
      if (function.function_info != nullptr || function.get_multi_file_reader != nullptr) {
        return Status::Internal(std::string("cannot register ") + kName +
                                ": this DuckDB's read_parquet has its own multi-file reader");
      }
      duckdb::table_function_init_global_t expected = nullptr;
      if (function.init_global == nullptr ||
          (!parquet_init_global.compare_exchange_strong(expected, function.init_global) &&
           expected != function.init_global)) {
        return Status::Internal(std::string("cannot register ") + kName +
                                ": this DuckDB's read_parquet overloads set up their scans differently");
      }
      function.init_global = InitGlobal;
      function.name = kName;
      function.function_info = info;
      function.get_multi_file_reader = CreateReader;
      function.named_parameters["position_delete_files"] = strings;
      function.named_parameters["position_data_paths"] = strings;
      function.named_parameters["position_data_locations"] = strings;
      function.named_parameters["position_data_deletes"] = duckdb::LogicalType::LIST(longs);
      function.named_parameters["vector_puffins"] = strings;
      function.named_parameters["vector_offsets"] = longs;
      function.named_parameters["vector_lengths"] = longs;
      function.named_parameters["vector_data_paths"] = strings;
      function.named_parameters["vector_row_counts"] = longs;
      set.AddFunction(std::move(function));
    }
    loader.RegisterFunction(std::move(set));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot register ") + kName + ": " + duckdb::ErrorData(e).Message());
  }
  return Status::Ok();
}

}  // namespace skade::engine
