// libFuzzer target: arbitrary bytes as an Arrow IPC stream (the bytes a Flight DoPut or an
// .arrows file hands the decoder). Every decoded batch is read as a strict C Data Interface
// consumer would, then re-encoded and decoded again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/c_data_consumer.h"
#include "skade/arrow/ipc.h"

namespace {

using skade::arrow::ArrayHandle;
using skade::arrow::SchemaHandle;
namespace ipc = skade::arrow::ipc;

// Enough batches to reach dictionary deltas and replacements; bounds the time per input.
constexpr int kMaxBatches = 32;

[[noreturn]] void Fail(const char* what, const skade::Status& status) {
  std::fprintf(stderr, "arrow_ipc_fuzzer: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto reader = ipc::StreamReader::Open(std::string(reinterpret_cast<const char*>(data), size));
  if (!reader.ok()) return 0;
  skade::Result<SchemaHandle> schema = (*reader)->ExportSchema();
  if (!schema.ok()) Fail("no schema after a successful Open", schema.status());
  // The encoder reads the decoded batches back: whatever it accepts must decode again.
  auto encoder = ipc::StreamEncoder::Make(*schema->get());
  std::vector<ipc::EncodedMessage> messages;
  if (encoder.ok()) messages.push_back((*encoder)->SchemaMessage());
  for (int i = 0; i < kMaxBatches; ++i) {
    skade::Result<std::optional<ArrayHandle>> batch = (*reader)->Next();
    if (!batch.ok() || !batch->has_value()) break;
    skade::fuzz::ConsumeArray(*schema->get(), *(*batch)->get());
    if (!encoder.ok()) continue;
    auto encoded = (*encoder)->EncodeBatch(std::move(**batch));
    if (!encoded.ok()) continue;
    for (ipc::EncodedMessage& m : *encoded) messages.push_back(std::move(m));
  }
  if (!encoder.ok()) return 0;
  std::string again = ipc::Concatenate(messages);
  again += ipc::EndOfStreamMarker();
  auto reread = ipc::StreamReader::Open(std::move(again));
  if (!reread.ok()) Fail("re-encoded stream does not open", reread.status());
  skade::Result<SchemaHandle> reread_schema = (*reread)->ExportSchema();
  if (!reread_schema.ok()) Fail("re-encoded schema", reread_schema.status());
  while (true) {
    skade::Result<std::optional<ArrayHandle>> batch = (*reread)->Next();
    if (!batch.ok()) Fail("re-encoded batch does not decode", batch.status());
    if (!batch->has_value()) break;
    skade::fuzz::ConsumeArray(*reread_schema->get(), *(*batch)->get());
  }
  return 0;
}
