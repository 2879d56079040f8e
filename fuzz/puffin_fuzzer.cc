// libFuzzer target: arbitrary bytes as a Puffin file (footer parsed, every deletion-vector-v1
// blob inside the blob area decoded) and as one deletion-vector-v1 blob. A vector that decodes
// must serialise to a blob that decodes to the same positions, and answer Contains for each.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/puffin.h"

namespace {

// Bounds the time per input: a bitset container alone holds 65536 positions.
constexpr int64_t kMaxPositionsChecked = 1 << 20;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "puffin_fuzzer: %s\n", what);
  std::abort();
}

void CheckVector(std::string_view blob) {
  auto dv = skade::iceberg::DeletionVector::Deserialize(blob);
  if (!dv.ok()) {
    if (dv.status().code() != skade::StatusCode::kCorruption) Fail("a bad blob is not Corruption");
    return;
  }
  if (dv->cardinality() > kMaxPositionsChecked) return;
  std::vector<int64_t> positions;
  dv->ForEach([&](int64_t p) { positions.push_back(p); });
  if (static_cast<int64_t>(positions.size()) != dv->cardinality()) Fail("ForEach disagrees with cardinality");
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] < 0 || (i > 0 && positions[i] <= positions[i - 1])) Fail("positions not ascending");
    if (!dv->Contains(positions[i])) Fail("Contains misses a position ForEach gave");
  }
  if (dv->max() != (positions.empty() ? -1 : positions.back())) Fail("max disagrees with ForEach");
  auto again = skade::iceberg::DeletionVector::Deserialize(dv->Serialize());
  if (!again.ok()) Fail("a serialised vector does not decode");
  std::vector<int64_t> round;
  again->ForEach([&](int64_t p) { round.push_back(p); });
  if (round != positions) Fail("a serialised vector decodes to other positions");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto footer = skade::iceberg::ParsePuffinFile(bytes, "fuzz.puffin");
  if (footer.ok()) {
    for (const auto& blob : footer->blobs) {
      if (blob.offset < 0 || blob.length < 0 || static_cast<uint64_t>(blob.offset) + blob.length > size) {
        Fail("a footer blob lies outside the file");
      }
      if (blob.type == skade::iceberg::kDeletionVectorBlob) CheckVector(bytes.substr(blob.offset, blob.length));
    }
  } else if (footer.status().code() != skade::StatusCode::kCorruption) {
    Fail("a bad footer is not Corruption");
  }
  CheckVector(bytes);
  return 0;
}
