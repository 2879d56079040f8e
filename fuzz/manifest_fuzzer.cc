// libFuzzer target: arbitrary bytes as an Avro object container file read three ways: as a
// manifest list, as a manifest (entries streamed with inheritance), and as generic Avro
// records, each of which must encode again under the file's schema.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "skade/iceberg/avro.h"
#include "skade/iceberg/manifest.h"

namespace {

// Bounds the time per input (a block may declare many records of zero bytes each).
constexpr int kMaxRecords = 4096;

[[noreturn]] void Fail(const char* what, const skade::Status& status) {
  std::fprintf(stderr, "manifest_fuzzer: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)skade::iceberg::ParseManifestList(bytes, "fuzz.avro");

  skade::iceberg::ManifestFile manifest;
  manifest.manifest_path = "fuzz.avro";
  manifest.sequence_number = 7;
  manifest.added_snapshot_id = 11;
  auto reader = skade::iceberg::ManifestReader::FromBytes(bytes, "fuzz.avro", manifest);
  if (reader.ok()) {
    (void)(*reader)->format_version();
    (void)(*reader)->partition_type();
    for (int i = 0; i < kMaxRecords; ++i) {
      auto entry = (*reader)->Next();
      if (!entry.ok() || !entry->has_value()) break;
    }
  }

  auto file = skade::iceberg::avro::FileReader::Open(bytes, "fuzz.avro");
  if (!file.ok()) return 0;
  const skade::iceberg::avro::AvroNode& schema = *(*file)->schema();
  for (int i = 0; i < kMaxRecords; ++i) {
    auto record = (*file)->Next();
    if (!record.ok() || !record->has_value()) break;
    std::string encoded;
    skade::Status s = skade::iceberg::avro::EncodeValue(schema, **record, &encoded);
    if (!s.ok()) Fail("a decoded record does not encode", s);
    std::string_view input(encoded);
    auto decoded = skade::iceberg::avro::DecodeValue(schema, &input);
    if (!decoded.ok()) Fail("an encoded record does not decode", decoded.status());
    if (!input.empty()) {
      std::fprintf(stderr, "manifest_fuzzer: re-decoding left %zu bytes\n", input.size());
      std::abort();
    }
  }
  return 0;
}
