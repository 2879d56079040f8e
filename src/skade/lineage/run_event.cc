#include "skade/lineage/run_event.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "skade/base/hash.h"
#include "skade/base/log.h"
#include "skade/io/location.h"

#ifndef SKADE_VERSION
#define SKADE_VERSION "0.0.0"
#endif

namespace skade::lineage {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFacets = "https://openlineage.io/spec/facets/";

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

Json OutputDataset(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata* metadata,
                   const LineageNaming& naming, const std::string& dataset_namespace) {
  Json facets = Json::object();
  Json output_facets = Json::object();
  if (metadata != nullptr) {
    if (auto schema = metadata->CurrentSchema()) {
      Json f = Facet("1-2-0/SchemaDatasetFacet.json", "SchemaDatasetFacet");
      f["fields"] = SchemaFields(schema->fields());
      facets["schema"] = std::move(f);
    }
  }
  Json source = Facet("1-0-1/DatasourceDatasetFacet.json", "DatasourceDatasetFacet");
  source["name"] = naming.catalog_name;
  source["uri"] = dataset_namespace;
  facets["dataSource"] = std::move(source);
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
    // Named the way engines name a table by its folder: the scheme and bucket (or "file"), then
    // the path.
    const std::string location = io::NormalizeLocation(metadata->location);
    std::string ns = "file", name = location;
    if (const size_t sep = location.find("://"); sep != std::string::npos) {
      const size_t slash = location.find('/', sep + 3);
      ns = location.substr(0, slash);
      name = slash == std::string::npos ? "/" : location.substr(slash);
    }
    Json s = Facet("1-0-1/SymlinksDatasetFacet.json", "SymlinksDatasetFacet");
    s["identifiers"] = Json::array({Json{{"namespace", ns}, {"name", name}, {"type", "LOCATION"}}});
    facets["symlinks"] = std::move(s);
  }
  if (metadata != nullptr && entry.snapshot_id) {
    if (const iceberg::Snapshot* snap = metadata->SnapshotById(*entry.snapshot_id)) {
      auto number = [&](const char* key) -> std::optional<int64_t> {
        auto v = snap->SummaryValue(key);
        if (!v) return std::nullopt;
        try {
          return std::stoll(*v);
        } catch (...) {
          return std::nullopt;
        }
      };
      Json stats = Facet("1-0-2/OutputStatisticsOutputDatasetFacet.json", "OutputStatisticsOutputDatasetFacet");
      stats["rowCount"] = number("added-records").value_or(entry.added_records);
      if (auto size = number("added-files-size")) stats["size"] = *size;
      if (auto files = number("added-data-files")) stats["fileCount"] = *files;
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

Uuid CommitRunId(const LineageNaming& naming, const catalog::CommitLogEntry& entry) {
  const std::string ns = naming.dataset_namespace;
  const std::string key = ns + '\n' + std::to_string(entry.commit_seq) + '\n' + entry.table.ToString();
  const uint64_t a = Fnv1a64(key, kFnv1aBasis ^ 0x736b616465ULL), b = Fnv1a64(key, kFnv1aBasis ^ 0x6c696e65616765ULL);
  Uuid id;
  const uint64_t ms = static_cast<uint64_t>(entry.committed_at_us / 1000);
  for (int i = 0; i < 6; ++i) id.bytes[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  for (int i = 6; i < 16; ++i) id.bytes[i] = static_cast<uint8_t>((i < 11 ? a : b) >> (8 * (i % 8)));
  id.bytes[6] = static_cast<uint8_t>(0x70 | (id.bytes[6] & 0x0F));  // version 7
  id.bytes[8] = static_cast<uint8_t>(0x80 | (id.bytes[8] & 0x3F));  // RFC 9562 variant
  return id;
}

std::string CommitJobName(const catalog::CommitLogEntry& entry) {
  return (entry.operation.empty() ? std::string("commit") : entry.operation) + ":" + entry.table.ToString();
}

std::vector<std::string> CommitRunEvents(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata* metadata,
                                         const LineageNaming& naming) {
  LineageNaming named = naming;
  if (named.dataset_namespace.empty()) named.dataset_namespace = DefaultDatasetNamespace(naming.warehouse);
  const std::string run_id = CommitRunId(named, entry).ToString();
  Json job_type = Facet("2-0-4/JobTypeJobFacet.json", "JobTypeJobFacet");
  job_type["processingType"] = "BATCH";
  job_type["integration"] = "SKADE";
  job_type["jobType"] = "COMMIT";
  Json job{{"namespace", named.job_namespace}, {"name", CommitJobName(entry)}, {"facets", {{"jobType", job_type}}}};
  Json engine = Facet("1-1-1/ProcessingEngineRunFacet.json", "ProcessingEngineRunFacet");
  engine["version"] = SKADE_VERSION;
  engine["name"] = "skade";
  Json outputs = Json::array({OutputDataset(entry, metadata, named, named.dataset_namespace)});
  std::vector<std::string> out;
  for (const char* type : {"START", "COMPLETE"}) {
    Json event{{"eventType", type},
               {"eventTime", IsoTime(entry.committed_at_us)},
               {"run", {{"runId", run_id}, {"facets", {{"processing_engine", engine}}}}},
               {"job", job},
               {"inputs", Json::array()},
               {"outputs", outputs},
               {"producer", ProducerUri()},
               {"schemaURL", kSchemaUrl}};
    out.push_back(event.dump());
  }
  return out;
}

CommitEventBuilder::CommitEventBuilder(io::FileIO& io, LineageNaming naming) : io_(io), naming_(std::move(naming)) {
  if (naming_.dataset_namespace.empty()) naming_.dataset_namespace = DefaultDatasetNamespace(naming_.warehouse);
}

std::vector<std::string> CommitEventBuilder::Build(const catalog::CommitLogEntry& entry) const {
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
  return CommitRunEvents(entry, metadata ? &*metadata : nullptr, naming_);
}

}  // namespace skade::lineage
