// Arrow IPC encode throughput: a 10M-row, 10-column DuckDB result encoded as zero-copy body
// slices (what the Flight server hands to gRPC) vs copied into one contiguous string.
//   ipc_bench [--rows N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "skade/arrow/ipc.h"
#include "skade/engine/database.h"

namespace {

using skade::arrow::ArrayHandle;
using skade::arrow::SchemaHandle;
using namespace skade::arrow::ipc;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 10'000'000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::atoll(argv[i + 1]);
  }
  auto db = skade::engine::Database::Open({});
  if (!db.ok()) return 1;
  std::string sql =
      "SELECT i AS c0, i * 2 AS c1, i::DOUBLE / 3 AS c2, (i % 1000)::INTEGER AS c3, "
      "'s' || (i % 100000) AS c4, i::DOUBLE * 1.5 AS c5, (i % 7 = 0) AS c6, "
      "DATE '2020-01-01' + (i % 3650)::INTEGER AS c7, "
      "TIMESTAMP '2020-01-01' + to_microseconds(i) AS c8, "
      "CASE WHEN i % 10 = 0 THEN NULL ELSE i END AS c9 FROM range(0, " + std::to_string(rows) + ") t(i)";
  auto stream = (*db)->QueryArrow(sql);
  if (!stream.ok()) {
    std::fprintf(stderr, "%s\n", stream.status().ToString().c_str());
    return 1;
  }
  SchemaHandle schema;
  (*stream)->get_schema(stream->get(), schema.get());
  // Materialise the result first so only encoding is timed; keep two owners per batch (the
  // encoder takes ownership), so query the batches once and encode them for both variants
  // from DuckDB's arrays by running the query twice.
  auto load = [&](skade::arrow::StreamHandle& s) {
    std::vector<ArrayHandle> batches;
    while (true) {
      ArrayHandle b;
      if (s->get_next(s.get(), b.get()) != 0 || !b.valid()) break;
      batches.push_back(std::move(b));
    }
    return batches;
  };
  std::vector<ArrayHandle> first = load(*stream);
  auto stream2 = (*db)->QueryArrow(sql);
  std::vector<ArrayHandle> second = load(*stream2);

  auto encoder = StreamEncoder::Make(*schema.get());
  if (!encoder.ok()) return 1;
  // Zero-copy: build messages whose bodies are slices; count the bytes they describe.
  int64_t bytes_zero = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (ArrayHandle& b : first) {
    auto m = (*encoder)->EncodeBatch(std::move(b));
    if (!m.ok()) return 1;
    for (const EncodedMessage& x : *m) bytes_zero += x.metadata.size() + x.body_length;
  }
  double zero_s = Seconds(t0);
  // Copying: the same, then concatenated into one contiguous string per batch.
  int64_t bytes_copy = 0;
  t0 = std::chrono::steady_clock::now();
  for (ArrayHandle& b : second) {
    auto m = (*encoder)->EncodeBatch(std::move(b));
    if (!m.ok()) return 1;
    std::string s = Concatenate(*m);
    bytes_copy += s.size();
  }
  double copy_s = Seconds(t0);
  std::printf("rows=%lld batches=%zu bytes=%lld\n", static_cast<long long>(rows), first.size(),
              static_cast<long long>(bytes_zero));
  std::printf("zero-copy slices: %.3f s  %.0f MB/s\n", zero_s, bytes_zero / zero_s / 1e6);
  std::printf("copying string:   %.3f s  %.0f MB/s\n", copy_s, bytes_copy / copy_s / 1e6);
  return 0;
}
