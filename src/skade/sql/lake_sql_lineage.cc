// LakeSql's lineage of SQL writes (DESIGN §9): the query whose rows a write writes is bound by
// DuckDB with each lake table it names standing for a scan of the snapshot it reads, and the
// bound plan gives the relations read and, per written column, the input columns it derives from
// (engine/query_lineage.h). Nothing here looks at SQL text: relations come from the parse tree
// (engine::SubstituteRelations), columns from the plan.
#include <filesystem>
#include <map>
#include <set>

#include "skade/base/log.h"
#include "skade/engine/pushdown_scan.h"
#include "skade/engine/query_lineage.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location.h"
#include "skade/sql/lake_sql.h"

namespace skade::sql {
namespace {

// DuckDB's table functions that read files: the files they are given are the write's inputs.
bool ReadsFiles(const std::string& function) {
  static const std::set<std::string> kReaders = {
      "read_parquet",      "parquet_scan",        "skade_read_parquet", "read_csv",    "read_csv_auto",
      "read_json",         "read_json_auto",      "read_ndjson",        "read_ndjson_auto",
      "read_json_objects", "read_ndjson_objects", "read_text",          "read_blob"};
  return kReaders.count(function) > 0;
}

// A file argument as a location: object-store URLs as they are (normalised), local paths made
// absolute against the working directory DuckDB read them from.
std::string FileLocation(const std::string& path) {
  if (path.find("://") != std::string::npos) return io::NormalizeLocation(path);
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return io::NormalizeLocation(error ? path : absolute.lexically_normal().string());
}

table::LineageTransformation TransformationOf(const engine::LineageOrigin& o) {
  return {engine::LineageTypeName(o.subtype), engine::LineageSubtypeName(o.subtype), o.masking};
}

}  // namespace

Result<table::SnapshotLineage> LakeSql::WriteLineage(engine::Database& db, std::string_view query,
                                                     const std::string& default_schema,
                                                     const std::vector<std::string>& columns) {
  SKADE_RETURN_IF_ERROR(SyncViews(query, default_schema));
  // Each lake table the query names (at the snapshot its view or AT clause reads) becomes a scan
  // of its own for this bind, so the plan says which table each column comes from; everything
  // else is substituted as a query of the session would have it (listings, unknown names).
  std::map<std::string, table::LineageInput> lake_scans;  // scan token → the table read
  auto substitute = [&](const engine::RelationReference& relation) -> Result<std::optional<std::string>> {
    if (relation.kind == engine::RelationReference::Kind::kTable && !relation.cte) {
      auto ident = Resolve(relation.name, default_schema);
      if (ident.ok() && (relation.at || HasView(*ident))) {
        iceberg::SnapshotSelector selector;
        std::unique_ptr<table::Table> t;
        if (relation.at) {
          SKADE_ASSIGN_OR_RETURN(selector, SelectorOf(*relation.at));
          SKADE_ASSIGN_OR_RETURN(t, LoadTable(*ident));
        } else {
          SKADE_ASSIGN_OR_RETURN(t, SyncView(*ident));  // the snapshot its view reads
        }
        SKADE_ASSIGN_OR_RETURN(iceberg::SelectedSnapshot selected, iceberg::SelectSnapshot(t->metadata(), selector));
        SKADE_ASSIGN_OR_RETURN(std::string token, RegisterSnapshotScan(*t, selector));
        db_.scans().Retire(token);  // bound below, within the grace
        table::LineageInput input;
        input.table = *ident;
        if (selected.snapshot != nullptr) input.snapshot_id = selected.snapshot->snapshot_id;
        lake_scans.emplace(token, std::move(input));
        return std::optional<std::string>(engine::PushdownScanSql(token));
      }
    }
    return Substitute(relation, default_schema, 0);
  };
  SKADE_ASSIGN_OR_RETURN(std::optional<std::string> substituted, engine::SubstituteRelations(query, substitute));
  SKADE_ASSIGN_OR_RETURN(engine::QueryLineage traced,
                         engine::DeriveLineage(db, substituted ? *substituted : std::string(query)));

  table::SnapshotLineage out;
  auto input_index = [&](const table::LineageInput& in) {
    for (size_t i = 0; i < out.inputs.size(); ++i) {
      if (out.inputs[i] == in) return i;
    }
    out.inputs.push_back(in);
    return out.inputs.size() - 1;
  };
  // The lineage inputs each relation of the plan stands for: a lake table, the files a reader
  // reads, or nothing (DuckDB's own tables, table functions such as range()).
  std::vector<std::vector<size_t>> inputs_of(traced.sources.size());
  for (size_t i = 0; i < traced.sources.size(); ++i) {
    const engine::LineageSource& source = traced.sources[i];
    if (source.function == engine::kPushdownScanFunction && source.arguments.size() == 1) {
      if (auto it = lake_scans.find(source.arguments[0]); it != lake_scans.end()) {
        inputs_of[i].push_back(input_index(it->second));
      }
    } else if (ReadsFiles(source.function)) {
      for (const std::string& file : source.arguments) {
        table::LineageInput input;
        input.location = FileLocation(file);
        inputs_of[i].push_back(input_index(input));
      }
    }
  }
  // Each (input, column) once, with every way it reaches the output.
  auto fields_of = [&](const std::vector<engine::LineageOrigin>& origins) {
    std::map<std::pair<size_t, std::string>, std::vector<table::LineageTransformation>> grouped;
    for (const engine::LineageOrigin& o : origins) {
      for (size_t input : inputs_of[o.source]) {
        auto& list = grouped[{input, o.column}];
        table::LineageTransformation t = TransformationOf(o);
        if (std::find(list.begin(), list.end(), t) == list.end()) list.push_back(std::move(t));
      }
    }
    std::vector<table::LineageField> fields;
    for (auto& [key, transformations] : grouped) fields.push_back({key.first, key.second, std::move(transformations)});
    return fields;
  };
  if (!traced.columns_traced) {
    SKADE_LOG_WARN("sql: column lineage left out (the plan has {} it does not trace); its input tables are named",
                   traced.untraced);
  }
  for (size_t i = 0; i < columns.size() && i < traced.origins.size(); ++i) {
    std::vector<table::LineageField> fields = fields_of(traced.origins[i]);
    if (!fields.empty()) out.columns[columns[i]] = std::move(fields);
  }
  out.dataset = fields_of(traced.dataset);
  return out;
}

void LakeSql::RecordLineage(table::Table& t, engine::Database& db, std::string_view query,
                            const std::string& default_schema, const std::vector<std::string>& columns) {
  auto lineage = WriteLineage(db, query, default_schema, columns);
  if (!lineage.ok()) {
    // A query DuckDB cannot bind fails the write itself, with that error, right after.
    SKADE_LOG_DEBUG("sql: the write to {} records no lineage: {}", t.ident().ToString(), lineage.status().ToString());
    return;
  }
  t.set_snapshot_lineage(std::move(*lineage));
}

}  // namespace skade::sql
