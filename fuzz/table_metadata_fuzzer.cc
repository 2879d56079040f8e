// libFuzzer target: arbitrary bytes as an Iceberg table metadata file (JSON, or gzip-compressed
// JSON), as a catalog reads it from storage or a REST client receives it. Parsed metadata is
// serialised and must parse again; the schema and type parsers the REST layer shares get the
// same bytes, and so do the view metadata parser (a view's metadata file) and the REST view
// update parser; parsed view metadata must round-trip and take an update list.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/view_metadata.h"

namespace {

[[noreturn]] void Fail(const char* what, const skade::Status& status) {
  std::fprintf(stderr, "table_metadata_fuzzer: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

// Calls the accessors catalogs and scans use on parsed metadata.
void Walk(const skade::iceberg::TableMetadata& m) {
  (void)m.CurrentSchema();
  (void)m.DefaultSpec();
  (void)m.SortOrderById(m.default_sort_order_id);
  if (const auto* current = m.CurrentSnapshot()) (void)m.SchemaForSnapshot(*current);
  for (const auto& snapshot : m.snapshots) {
    (void)m.SchemaForSnapshot(snapshot);
    (void)snapshot.operation();
  }
  for (const auto& [name, ref] : m.refs) (void)m.SnapshotForRef(name);
  (void)m.SnapshotAsOf(m.last_updated_ms);
  (void)m.DefaultNameMapping();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto metadata = skade::iceberg::ParseTableMetadataFile(bytes);
  if (metadata.ok()) {
    Walk(*metadata);
    std::string json = skade::iceberg::TableMetadataToJson(*metadata);
    auto again = skade::iceberg::ParseTableMetadata(json);
    if (!again.ok()) Fail("serialised metadata does not parse", again.status());
    if (skade::iceberg::TableMetadataToJson(*again) != json) {
      std::fprintf(stderr, "table_metadata_fuzzer: serialisation is not stable\n");
      std::abort();
    }
  }
  auto schema = skade::iceberg::ParseSchemaJson(bytes);
  if (schema.ok()) {
    auto again = skade::iceberg::ParseSchemaJson(skade::iceberg::SchemaToJson(**schema));
    if (!again.ok()) Fail("serialised schema does not parse", again.status());
  }
  auto type = skade::iceberg::ParseTypeJson(bytes);
  if (type.ok()) {
    auto again = skade::iceberg::ParseTypeJson(skade::iceberg::TypeToJson(**type));
    if (!again.ok()) Fail("serialised type does not parse", again.status());
  }
  auto view = skade::iceberg::ParseViewMetadata(bytes);
  if (view.ok()) {
    (void)view->CurrentVersion();
    (void)view->CurrentSchema();
    std::string json = skade::iceberg::ViewMetadataToJson(*view);
    auto again = skade::iceberg::ParseViewMetadata(json);
    if (!again.ok()) Fail("serialised view metadata does not parse", again.status());
    if (skade::iceberg::ViewMetadataToJson(*again) != json) {
      std::fprintf(stderr, "table_metadata_fuzzer: view serialisation is not stable\n");
      std::abort();
    }
    // Its own current version added again, made current: a valid update list for any view.
    skade::iceberg::ViewUpdate add;
    add.kind = skade::iceberg::ViewUpdate::Kind::kAddViewVersion;
    add.version = *view->CurrentVersion();
    skade::iceberg::ViewUpdate current;
    current.kind = skade::iceberg::ViewUpdate::Kind::kSetCurrentViewVersion;
    current.version_id = -1;
    // (Refused only for a history setting that is no positive integer: exercised, not judged.)
    (void)skade::iceberg::ApplyViewUpdates(*view, {add, current}, 1);
  }
  auto update = skade::iceberg::ParseViewUpdate(bytes);
  if (update.ok()) {
    auto again = skade::iceberg::ParseViewUpdate(skade::iceberg::ViewUpdateToJson(*update));
    if (!again.ok()) Fail("serialised view update does not parse", again.status());
  }
  return 0;
}
