// Puffin files (Iceberg "Puffin file format"): blobs — deletion vectors, statistics sketches —
// followed by a footer "PFA1" + JSON payload (optionally LZ4-compressed) + payload size
// (4 bytes, little-endian) + flags (4 bytes) + "PFA1", after a leading "PFA1".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

inline constexpr std::string_view kDeletionVectorBlob = "deletion-vector-v1";

// One blob's entry in the footer (spec "BlobMetadata").
struct PuffinBlob {
  std::string type;
  std::vector<int> fields;
  int64_t snapshot_id = -1;
  int64_t sequence_number = -1;
  int64_t offset = 0;  // from the start of the file
  int64_t length = 0;
  std::optional<std::string> compression_codec;  // absent = uncompressed
  std::map<std::string, std::string> properties;
};

struct PuffinFooter {
  std::vector<PuffinBlob> blobs;
  std::map<std::string, std::string> properties;

  // The blob that starts at `offset`, or nullptr.
  const PuffinBlob* BlobAt(int64_t offset) const;
};

// Reads and checks the footer of the Puffin file at `location`: both magics, the payload size
// against the file size, the JSON shape, every blob inside the blob area. kCorruption naming
// the file for any inconsistency; kNotFound when absent.
Result<PuffinFooter> ReadPuffinFooter(io::FileIO& io, std::string_view location);

// The same over a whole file's bytes (`name` for messages).
Result<PuffinFooter> ParsePuffinFile(std::string_view file, std::string_view name);

// Builds a Puffin file in memory: blobs are appended after the leading magic, the footer is
// written by Finish (uncompressed; `compress_footer` LZ4-compresses it and sets the flag).
class PuffinWriter {
 public:
  PuffinWriter();
  // Appends `bytes` as a blob described by `blob` (its offset and length are filled in and the
  // completed entry returned).
  const PuffinBlob& Add(PuffinBlob blob, std::string_view bytes);
  std::string Finish(const std::map<std::string, std::string>& properties, bool compress_footer = false);

 private:
  std::string file_;
  std::vector<PuffinBlob> blobs_;
};

}  // namespace skade::iceberg
