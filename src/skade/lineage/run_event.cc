#include "skade/lineage/run_event.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "skade/base/hash.h"
#include "skade/base/log.h"
#include "skade/io/location.h"
#include "skade/table/snapshot_lineage.h"

#ifndef SKADE_VERSION
#define SKADE_VERSION "0.0.0"
#endif

namespace skade::lineage {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFacets = "https://openlineage.io/spec/facets/";

// The Iceberg facets of the OpenLineage registry (spec/registry/iceberg), by their $id.
constexpr const char* kCommitReportFacetFile = "1-0-2/IcebergCommitReportOutputDatasetFacet.json";
constexpr const char* kScanReportFacetFile = "1-0-1/IcebergScanReportInputDatasetFacet.json";

// A facet's two common fields: who wrote it and the schema (file + definition) it follows.
Json Facet(const std::string& file, const std::string& name) {
  return Json{{"_producer", ProducerUri()}, {"_schemaURL", std::string(kFacets) + file + "#/$defs/" + name}};
}

std::string IsoTime(int64_t micros) {
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>((micros / 1000) % 1000));
  return buf;
}

Json SchemaFields(const std::vector<iceberg::NestedField>& fields) {
  Json out = Json::array();
  for (const iceberg::NestedField& f : fields) {
    Json field{{"name", f.name}, {"type", f.type->is_primitive() ? f.type->ToString() : [&] {
                                   switch (f.type->id()) {
                                     case iceberg::TypeId::kStruct: return std::string("struct");
                                     case iceberg::TypeId::kList: return std::string("list");
                                     default: return std::string("map");
                                   }
                                 }()}};
    if (!f.doc.empty()) field["description"] = f.doc;
    if (f.type->id() == iceberg::TypeId::kStruct) {
      field["fields"] = SchemaFields(f.type->fields());
    } else if (f.type->id() == iceberg::TypeId::kList) {
      field["fields"] = SchemaFields({f.type->element()});
    } else if (f.type->id() == iceberg::TypeId::kMap) {
      field["fields"] = SchemaFields({f.type->key(), f.type->value()});
    }
    out.push_back(std::move(field));
  }
  return out;
}

// The lifecycle change a commit makes to its table, if it is one the facet names.
const char* LifecycleOf(const std::string& operation) {
  if (operation == "create" || operation == "register") return "CREATE";
  if (operation == "drop") return "DROP";
  if (operation == "overwrite") return "OVERWRITE";
  if (operation == "update") return "ALTER";
  if (operation == "rename") return "RENAME";
  return nullptr;
}

// The lake's dataSource facet: the catalog's name and the datasets' namespace.
Json DataSourceFacet(const std::string& dataset_namespace, const LineageNaming& naming) {
  Json source = Facet("1-0-1/DatasourceDatasetFacet.json", "DatasourceDatasetFacet");
  source["name"] = naming.catalog_name;
  source["uri"] = dataset_namespace;
  return source;
}

// A storage location named the way engines name a table or file by where it is: the scheme and
// bucket (or "file"), then the path.
std::pair<std::string, std::string> LocationName(const std::string& raw) {
  const std::string location = io::NormalizeLocation(raw);
  std::string ns = "file", name = location;
  if (const size_t sep = location.find("://"); sep != std::string::npos) {
    const size_t slash = location.find('/', sep + 3);
    ns = location.substr(0, slash);
    name = slash == std::string::npos ? "/" : location.substr(slash);
  }
  return {ns, name};
}

// A dataset of this lake, named the way every event names it, with its dataSource facet.
Json LakeDataset(const std::string& table, const std::string& dataset_namespace, const LineageNaming& naming) {
  return Json{{"namespace", dataset_namespace},
              {"name", table},
              {"facets", {{"dataSource", DataSourceFacet(dataset_namespace, naming)}}}};
}

// The input datasets a snapshot's lineage names (each at the snapshot read).
Json InputDatasets(const table::SnapshotLineage* lineage, const std::string& dataset_namespace,
                   const LineageNaming& naming) {
  Json inputs = Json::array();
  if (lineage == nullptr) return inputs;
  for (const table::LineageInput& in : lineage->inputs) {
    if (!in.location.empty()) {
      // Files read that are no table of the lake (read_parquet in SQL): named by location.
      auto [ns, name] = LocationName(in.location);
      inputs.push_back(Json{{"namespace", ns}, {"name", name}, {"facets", Json::object()}});
      continue;
    }
    Json d = LakeDataset(in.table.ToString(), dataset_namespace, naming);
    if (in.snapshot_id) {
      Json v = Facet("1-0-1/DatasetVersionDatasetFacet.json", "DatasetVersionDatasetFacet");
      v["datasetVersion"] = std::to_string(*in.snapshot_id);
      d["facets"]["version"] = std::move(v);
      // skade planned this read (a transform's source scan); what it records of it is the
      // snapshot read.
      Json scan = Facet(kScanReportFacetFile, "IcebergScanReportInputDatasetFacet");
      scan["snapshotId"] = *in.snapshot_id;
      d["inputFacets"]["icebergScanReport"] = std::move(scan);
    }
    inputs.push_back(std::move(d));
  }
  return inputs;
}

// One InputField of the columnLineage facet: the input's dataset, the field and, when the
// writer recorded them, its transformations.
Json InputField(const table::SnapshotLineage& lineage, const table::LineageField& f,
                const std::string& dataset_namespace) {
  const table::LineageInput& in = lineage.inputs[f.input];
  Json field;
  if (in.location.empty()) {
    field = Json{{"namespace", dataset_namespace}, {"name", in.table.ToString()}, {"field", f.field}};
  } else {
    auto [ns, name] = LocationName(in.location);
    field = Json{{"namespace", ns}, {"name", name}, {"field", f.field}};
  }
  if (!f.transformations.empty()) {
    Json list = Json::array();
    for (const table::LineageTransformation& t : f.transformations) {
      Json one{{"type", t.type}, {"subtype", t.subtype}};
      if (t.masking) one["masking"] = true;
      list.push_back(std::move(one));
    }
    field["transformations"] = std::move(list);
  }
  return field;
}

// The columnLineage facet of a snapshot's lineage: each output column with the input fields
// it is derived from, and the input fields acting on all of its rows ("dataset").
std::optional<Json> ColumnLineageFacet(const table::SnapshotLineage* lineage, const std::string& dataset_namespace) {
  if (lineage == nullptr || (lineage->columns.empty() && lineage->dataset.empty())) return std::nullopt;
  Json fields = Json::object();
  for (const auto& [out, ins] : lineage->columns) {
    Json input_fields = Json::array();
    for (const table::LineageField& f : ins) input_fields.push_back(InputField(*lineage, f, dataset_namespace));
    fields[out] = Json{{"inputFields", std::move(input_fields)}};
  }
  Json facet = Facet("1-2-0/ColumnLineageDatasetFacet.json", "ColumnLineageDatasetFacet");
  facet["fields"] = std::move(fields);
  if (!lineage->dataset.empty()) {
    Json dataset = Json::array();
    for (const table::LineageField& f : lineage->dataset) dataset.push_back(InputField(*lineage, f, dataset_namespace));
    facet["dataset"] = std::move(dataset);
  }
  return facet;
}

// The lineage the commit's snapshot records, if any (one that does not decode is logged).
std::optional<table::SnapshotLineage> LineageOf(const catalog::CommitLogEntry& entry,
                                                const iceberg::TableMetadata* metadata) {
  if (metadata == nullptr || !entry.snapshot_id) return std::nullopt;
  const iceberg::Snapshot* snap = metadata->SnapshotById(*entry.snapshot_id);
  if (snap == nullptr) return std::nullopt;
  auto lineage = table::SnapshotLineageOf(*snap);
  if (!lineage.ok()) {
    SKADE_LOG_WARN("openlineage: commit {}: lineage of snapshot {} ignored: {}", entry.commit_seq, *entry.snapshot_id,
                   lineage.status().ToString());
    return std::nullopt;
  }
  return *lineage;
}

// The snapshot a commit added, if it added one: a commit logged under an Iceberg snapshot
// operation (spec "Snapshots": append, replace, overwrite, delete) names the snapshot it added,
// whose summary gives the same operation. Other commits (schema updates, creates, ref moves)
// name the table's current snapshot, which they did not make.
const iceberg::Snapshot* AddedSnapshot(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata* metadata) {
  static const std::set<std::string> kSnapshotOperations = {"append", "replace", "overwrite", "delete"};
  if (metadata == nullptr || !entry.snapshot_id || kSnapshotOperations.count(entry.operation) == 0) return nullptr;
  const iceberg::Snapshot* snap = metadata->SnapshotById(*entry.snapshot_id);
  if (snap == nullptr) return nullptr;
  const std::string op = snap->operation().empty() ? std::string("append") : snap->operation();
  return op == entry.operation ? snap : nullptr;
}

// Snapshot summary keys (spec "Snapshot Summary") and the commitMetrics fields they give.
// `skade_writes`: skade's own summaries (engine-name "skade") write the key whenever it is not
// zero, so there its absence is a known 0; in another engine's summary absence is unknown.
struct CommitMetric {
  const char* summary_key;
  const char* field;
  bool skade_writes;
};
constexpr CommitMetric kCommitMetrics[] = {
    {"added-data-files", "addedDataFiles", true},
    {"deleted-data-files", "removedDataFiles", true},
    {"total-data-files", "totalDataFiles", true},
    {"added-delete-files", "addedDeleteFiles", true},
    {"added-equality-delete-files", "addedEqualityDeleteFiles", true},
    {"added-position-delete-files", "addedPositionalDeleteFiles", true},
    {"added-dvs", "addedDVs", true},
    {"removed-delete-files", "removedDeleteFiles", true},
    {"removed-equality-delete-files", "removedEqualityDeleteFiles", false},
    {"removed-position-delete-files", "removedPositionalDeleteFiles", false},
    {"removed-dvs", "removedDVs", true},
    {"total-delete-files", "totalDeleteFiles", true},
    {"added-records", "addedRecords", true},
    {"deleted-records", "removedRecords", true},
    {"total-records", "totalRecords", true},
    {"added-files-size", "addedFilesSizeInBytes", true},
    {"removed-files-size", "removedFilesSizeInBytes", true},
    {"total-files-size", "totalFilesSizeInBytes", true},
    {"added-position-deletes", "addedPositionalDeletes", true},
    {"removed-position-deletes", "removedPositionalDeletes", true},
    {"total-position-deletes", "totalPositionalDeletes", true},
    {"added-equality-deletes", "addedEqualityDeletes", true},
    {"removed-equality-deletes", "removedEqualityDeletes", true},
    {"total-equality-deletes", "totalEqualityDeletes", true},
};

// The icebergCommitReport output facet of a commit that added `snap` (Iceberg's CommitReport):
// only values the commit recorded.
Json CommitReportFacet(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata& metadata,
                       const iceberg::Snapshot& snap) {
  Json report = Facet(kCommitReportFacetFile, "IcebergCommitReportOutputDatasetFacet");
  report["snapshotId"] = snap.snapshot_id;
  // v1 tables have no sequence numbers (spec "Sequence Numbers"): none to report.
  if (metadata.format_version >= 2) report["sequenceNumber"] = snap.sequence_number;
  report["operation"] = entry.operation;
  Json metrics = Json::object();
  // Duration and attempts as skade's table layer records them (table/snapshot_lineage.h): from
  // the commit's start to the commit log's time of the commit, in milliseconds.
  const std::optional<int64_t> started = snap.SummaryLong(table::kCommitStartedAtKey);
  if (started && entry.committed_at_us >= *started) {
    metrics["totalDuration"] = static_cast<double>(entry.committed_at_us - *started) / 1000.0;
  }
  if (auto attempts = snap.SummaryLong(table::kCommitAttemptKey)) metrics["attempts"] = *attempts;
  const bool by_skade = snap.SummaryValue("engine-name") == std::optional<std::string>("skade");
  for (const CommitMetric& m : kCommitMetrics) {
    std::optional<int64_t> value = snap.SummaryLong(m.summary_key);
    if (!value && by_skade && m.skade_writes) value = 0;
    if (value) metrics[m.field] = *value;
  }
  report["commitMetrics"] = std::move(metrics);
  return report;
}

// The icebergScanReport input facet of a scan skade planned for a write.
Json ScanReportFacet(const table::ScanReport& r) {
  Json report = Facet(kScanReportFacetFile, "IcebergScanReportInputDatasetFacet");
  report["snapshotId"] = r.snapshot_id;
  report["schemaId"] = r.schema_id;
  if (!r.filter.empty()) report["filterDescription"] = r.filter;
  report["projectedFieldNames"] = r.projected_field_names;
  report["scanMetrics"] = Json{{"totalPlanningDuration", static_cast<double>(r.planning_duration_us) / 1000.0},
                               {"resultDataFiles", r.result_data_files},
                               {"resultDeleteFiles", r.result_delete_files},
                               {"skippedDataFiles", r.skipped_data_files},
                               {"totalFileSizeInBytes", r.total_file_size_in_bytes},
                               {"totalDeleteFileSizeInBytes", r.total_delete_file_size_in_bytes},
                               {"indexedDeleteFiles", r.indexed_delete_files}};
  return report;
}

// The table itself as an input, when the commit's snapshot records a scan of it that the
// write planned (copy-on-write delete or overwrite, compaction).
std::optional<Json> OwnScanInput(const catalog::CommitLogEntry& entry, const iceberg::Snapshot* added,
                                 const std::string& dataset_namespace, const LineageNaming& naming) {
  if (added == nullptr) return std::nullopt;
  auto report = table::ScanReportOf(*added);
  if (!report.ok()) {
    SKADE_LOG_WARN("openlineage: commit {}: scan report of snapshot {} ignored: {}", entry.commit_seq,
                   added->snapshot_id, report.status().ToString());
    return std::nullopt;
  }
  if (!*report) return std::nullopt;
  Json d = LakeDataset(entry.table.ToString(), dataset_namespace, naming);
  Json v = Facet("1-0-1/DatasetVersionDatasetFacet.json", "DatasetVersionDatasetFacet");
  v["datasetVersion"] = std::to_string((*report)->snapshot_id);
  d["facets"]["version"] = std::move(v);
  d["inputFacets"]["icebergScanReport"] = ScanReportFacet(**report);
  return d;
}

Json OutputDataset(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata* metadata,
                   const LineageNaming& naming, const std::string& dataset_namespace,
                   const table::SnapshotLineage* lineage) {
  Json facets = Json::object();
  Json output_facets = Json::object();
  if (metadata != nullptr) {
    if (auto schema = metadata->CurrentSchema()) {
      Json f = Facet("1-2-0/SchemaDatasetFacet.json", "SchemaDatasetFacet");
      f["fields"] = SchemaFields(schema->fields());
      facets["schema"] = std::move(f);
    }
  }
  facets["dataSource"] = DataSourceFacet(dataset_namespace, naming);
  Json cat = Facet("1-1-0/CatalogDatasetFacet.json", "CatalogDatasetFacet");
  cat["framework"] = "iceberg";
  cat["type"] = "iceberg";
  cat["name"] = naming.catalog_name;
  if (!naming.catalog_uri.empty()) cat["metadataUri"] = naming.catalog_uri;
  if (!naming.warehouse.empty()) cat["warehouseUri"] = naming.warehouse;
  cat["source"] = "skade";
  facets["catalog"] = std::move(cat);
  if (entry.snapshot_id) {
    Json v = Facet("1-0-1/DatasetVersionDatasetFacet.json", "DatasetVersionDatasetFacet");
    v["datasetVersion"] = std::to_string(*entry.snapshot_id);
    facets["version"] = std::move(v);
  }
  if (const char* change = LifecycleOf(entry.operation)) {
    Json l = Facet("1-0-1/LifecycleStateChangeDatasetFacet.json", "LifecycleStateChangeDatasetFacet");
    l["lifecycleStateChange"] = change;
    facets["lifecycleStateChange"] = std::move(l);
  }
  if (naming.storage_symlink && metadata != nullptr && !metadata->location.empty()) {
    // Named the way engines name a table by its folder.
    auto [ns, name] = LocationName(metadata->location);
    Json s = Facet("1-0-1/SymlinksDatasetFacet.json", "SymlinksDatasetFacet");
    s["identifiers"] = Json::array({Json{{"namespace", ns}, {"name", name}, {"type", "LOCATION"}}});
    facets["symlinks"] = std::move(s);
  }
  if (auto columns = ColumnLineageFacet(lineage, dataset_namespace)) facets["columnLineage"] = std::move(*columns);
  if (metadata != nullptr && entry.snapshot_id) {
    if (const iceberg::Snapshot* snap = metadata->SnapshotById(*entry.snapshot_id)) {
      Json stats = Facet("1-0-2/OutputStatisticsOutputDatasetFacet.json", "OutputStatisticsOutputDatasetFacet");
      stats["rowCount"] = snap->SummaryLong("added-records").value_or(entry.added_records);
      if (auto size = snap->SummaryLong("added-files-size")) stats["size"] = *size;
      if (auto files = snap->SummaryLong("added-data-files")) stats["fileCount"] = *files;
      output_facets["outputStatistics"] = std::move(stats);
    }
  }
  Json dataset{{"namespace", dataset_namespace}, {"name", entry.table.ToString()}, {"facets", std::move(facets)}};
  if (!output_facets.empty()) dataset["outputFacets"] = std::move(output_facets);
  return dataset;
}

}  // namespace

std::string ProducerUri() { return "https://github.com/skade-lake/skade/tree/v" SKADE_VERSION; }

std::string DefaultDatasetNamespace(std::string_view warehouse) {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "localhost");
  std::string path(warehouse);
  if (io::IsObjectStoreLocation(path)) return io::NormalizeLocation(path);  // a bucket names itself
  while (!path.empty() && path.front() == '/') path.erase(path.begin());
  return "skade://" + std::string(host) + "/" + path;
}

std::string CommitJobName(const catalog::CommitLogEntry& entry) {
  return (entry.operation.empty() ? std::string("commit") : entry.operation) + ":" + entry.table.ToString();
}

namespace {

// A version-7 UUID at `micros` whose other bits hash `key`.
Uuid HashedV7(int64_t micros, const std::string& key) {
  const uint64_t a = Fnv1a64(key, kFnv1aBasis ^ 0x736b616465ULL), b = Fnv1a64(key, kFnv1aBasis ^ 0x6c696e65616765ULL);
  Uuid id;
  const uint64_t ms = static_cast<uint64_t>(micros / 1000);
  for (int i = 0; i < 6; ++i) id.bytes[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  for (int i = 6; i < 16; ++i) id.bytes[i] = static_cast<uint8_t>((i < 11 ? a : b) >> (8 * (i % 8)));
  id.bytes[6] = static_cast<uint8_t>(0x70 | (id.bytes[6] & 0x0F));  // version 7
  id.bytes[8] = static_cast<uint8_t>(0x80 | (id.bytes[8] & 0x3F));  // RFC 9562 variant
  return id;
}

LineageNaming Resolved(const LineageNaming& naming) {
  LineageNaming named = naming;
  if (named.dataset_namespace.empty()) named.dataset_namespace = DefaultDatasetNamespace(naming.warehouse);
  return named;
}

Json Job(const LineageNaming& naming, const std::string& name, const char* type = "COMMIT") {
  Json job_type = Facet("2-0-4/JobTypeJobFacet.json", "JobTypeJobFacet");
  job_type["processingType"] = "BATCH";
  job_type["integration"] = "SKADE";
  job_type["jobType"] = type;
  return Json{{"namespace", naming.job_namespace}, {"name", name}, {"facets", {{"jobType", job_type}}}};
}

Json EngineFacet() {
  Json engine = Facet("1-1-1/ProcessingEngineRunFacet.json", "ProcessingEngineRunFacet");
  engine["version"] = SKADE_VERSION;
  engine["name"] = "skade";
  return engine;
}

std::string Event(const char* type, int64_t micros, const std::string& run_id, const Json& run_facets, const Json& job,
                  const Json& inputs, const Json& outputs) {
  Json event{{"eventType", type},
             {"eventTime", IsoTime(micros)},
             {"run", {{"runId", run_id}, {"facets", run_facets}}},
             {"job", job},
             {"inputs", inputs},
             {"outputs", outputs},
             {"producer", ProducerUri()},
             {"schemaURL", kSchemaUrl}};
  return event.dump();
}

}  // namespace

Uuid CommitRunId(const LineageNaming& naming, const catalog::CommitLogEntry& entry) {
  return HashedV7(entry.committed_at_us,
                  naming.dataset_namespace + '\n' + std::to_string(entry.commit_seq) + '\n' + entry.table.ToString());
}

std::vector<std::string> CommitRunEvents(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata* metadata,
                                         const LineageNaming& naming, const ParentRun* parent) {
  const LineageNaming named = Resolved(naming);
  const std::string run_id = CommitRunId(named, entry).ToString();
  const Json job = Job(named, CommitJobName(entry));
  Json run_facets{{"processing_engine", EngineFacet()}};
  if (parent != nullptr) {
    const Json parent_job{{"namespace", named.job_namespace}, {"name", parent->job_name}};
    Json facet = Facet("1-2-0/ParentRunFacet.json", "ParentRunFacet");
    facet["run"] = Json{{"runId", parent->run_id}};
    facet["job"] = parent_job;
    facet["root"] = Json{{"run", {{"runId", parent->run_id}}}, {"job", parent_job}};  // the parent is the root
    run_facets["parent"] = std::move(facet);
  }
  const std::optional<table::SnapshotLineage> lineage = LineageOf(entry, metadata);
  const table::SnapshotLineage* recorded = lineage ? &*lineage : nullptr;
  const iceberg::Snapshot* added = AddedSnapshot(entry, metadata);
  const Json outputs = Json::array({OutputDataset(entry, metadata, named, named.dataset_namespace, recorded)});
  Json completed = outputs;
  if (added != nullptr) completed[0]["outputFacets"]["icebergCommitReport"] = CommitReportFacet(entry, *metadata, *added);
  Json inputs = InputDatasets(recorded, named.dataset_namespace, named);
  if (auto own = OwnScanInput(entry, added, named.dataset_namespace, named)) {
    // A write whose lineage names its own table (an UPDATE or MERGE in SQL reads the rows it
    // rewrites) names it once: the scan it planned goes on that input.
    bool merged = false;
    for (Json& in : inputs) {
      if (in["namespace"] == (*own)["namespace"] && in["name"] == (*own)["name"] &&
          (!in["facets"].contains("version") || in["facets"]["version"] == (*own)["facets"]["version"])) {
        in["facets"]["version"] = (*own)["facets"]["version"];
        in["inputFacets"]["icebergScanReport"] = (*own)["inputFacets"]["icebergScanReport"];
        merged = true;
        break;
      }
    }
    if (!merged) inputs.push_back(std::move(*own));
  }
  return {Event("START", entry.committed_at_us, run_id, run_facets, job, inputs, outputs),
          Event("COMPLETE", entry.committed_at_us, run_id, run_facets, job, inputs, completed)};
}

bool IsMultiTableCommit(const std::vector<catalog::CommitLogEntry>& entries) {
  for (const catalog::CommitLogEntry& e : entries) {
    if (e.txn_id.empty() || e.txn_id != entries.front().txn_id) return false;
    if (e.table != entries.front().table) return true;
  }
  return false;
}

ParentRun TransactionParentRun(const LineageNaming& naming, const std::vector<catalog::CommitLogEntry>& entries) {
  SKADE_DCHECK(!entries.empty());
  const LineageNaming named = Resolved(naming);
  std::set<std::string> tables;
  for (const catalog::CommitLogEntry& e : entries) tables.insert(e.table.ToString());
  std::string name = "transaction:";
  bool first_table = true;
  for (const std::string& t : tables) {
    if (!first_table) name += ',';
    name += t;
    first_table = false;
  }
  const catalog::CommitLogEntry& first = entries.front();
  return ParentRun{HashedV7(first.committed_at_us, named.dataset_namespace + "\ntxn\n" + first.txn_id).ToString(),
                   std::move(name)};
}

std::vector<std::string> TransactionRunEvents(const LineageNaming& naming,
                                              const std::vector<catalog::CommitLogEntry>& entries) {
  const LineageNaming named = Resolved(naming);
  const ParentRun parent = TransactionParentRun(named, entries);
  const Json job = Job(named, parent.job_name, "TRANSACTION");
  const Json run_facets{{"processing_engine", EngineFacet()}};
  const int64_t at = entries.front().committed_at_us;
  return {Event("START", at, parent.run_id, run_facets, job, Json::array(), Json::array()),
          Event("COMPLETE", at, parent.run_id, run_facets, job, Json::array(), Json::array())};
}

std::vector<std::string> FailedWriteRunEvents(const table::FailedWrite& write, const LineageNaming& naming) {
  const LineageNaming named = Resolved(naming);
  const std::string table = write.table.ToString();
  const std::string key = named.dataset_namespace + "\nfailed\n" + table + '\n' + write.operation + '\n' +
                          std::to_string(write.started_at_us) + '\n' + std::to_string(write.failed_at_us);
  const std::string run_id = HashedV7(write.started_at_us, key).ToString();
  const Json job = Job(named, (write.operation.empty() ? std::string("write") : write.operation) + ":" + table);
  const Json start_facets{{"processing_engine", EngineFacet()}};
  Json fail_facets = start_facets;
  Json error = Facet("1-0-1/ErrorMessageRunFacet.json", "ErrorMessageRunFacet");
  error["message"] = write.error;
  error["programmingLanguage"] = "C++";
  fail_facets["errorMessage"] = std::move(error);
  const table::SnapshotLineage* lineage = write.lineage.empty() ? nullptr : &write.lineage;
  const Json inputs = InputDatasets(lineage, named.dataset_namespace, named);
  const Json outputs = Json::array({LakeDataset(table, named.dataset_namespace, named)});
  return {Event("START", write.started_at_us, run_id, start_facets, job, inputs, outputs),
          Event("FAIL", write.failed_at_us, run_id, fail_facets, job, inputs, outputs)};
}

CommitEventBuilder::CommitEventBuilder(io::FileIO& io, LineageNaming naming) : io_(io), naming_(std::move(naming)) {
  if (naming_.dataset_namespace.empty()) naming_.dataset_namespace = DefaultDatasetNamespace(naming_.warehouse);
}

std::vector<std::string> CommitEventBuilder::BuildTransaction(const std::vector<catalog::CommitLogEntry>& entries) const {
  std::vector<std::string> events;
  if (!IsMultiTableCommit(entries)) {
    for (const catalog::CommitLogEntry& e : entries) {
      std::vector<std::string> own = Build(e);
      events.insert(events.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
    }
    return events;
  }
  const ParentRun parent = TransactionParentRun(naming_, entries);
  std::vector<std::string> outer = TransactionRunEvents(naming_, entries);
  events.push_back(std::move(outer[0]));
  for (const catalog::CommitLogEntry& e : entries) {
    std::vector<std::string> own = Build(e, &parent);
    events.insert(events.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  }
  events.push_back(std::move(outer[1]));
  return events;
}

std::vector<std::string> CommitEventBuilder::Build(const catalog::CommitLogEntry& entry, const ParentRun* parent) const {
  std::optional<iceberg::TableMetadata> metadata;
  if (entry.operation != "drop" && !entry.metadata_location.empty()) {
    auto bytes = io_.Read(entry.metadata_location);
    auto parsed = bytes.ok() ? iceberg::ParseTableMetadataFile(*bytes) : Result<iceberg::TableMetadata>(bytes.status());
    if (parsed.ok()) {
      metadata = std::move(*parsed);
    } else {
      SKADE_LOG_WARN("openlineage: commit {}: no schema or statistics, metadata unreadable: {}", entry.commit_seq,
                     parsed.status().ToString());
    }
  }
  return CommitRunEvents(entry, metadata ? &*metadata : nullptr, naming_, parent);
}

}  // namespace skade::lineage
