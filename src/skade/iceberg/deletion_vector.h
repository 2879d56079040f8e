// Deletion vectors (spec v3 "Deletion Vectors", Puffin blob type deletion-vector-v1): the
// deleted row positions of one data file, kept as the spec serialises them — a 64-bit Roaring
// bitmap (32-bit key → 32-bit Roaring bitmap, portable format) inside a blob framed by a
// big-endian length, the magic D1 D3 39 64 and a big-endian CRC-32 of magic and vector.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::iceberg {

class DeletionVector {
 public:
  DeletionVector() = default;

  // Decodes a whole deletion-vector-v1 blob. kCorruption for a wrong length, magic or CRC, a
  // malformed bitmap (truncated, unsorted keys, a container past the blob) or a negative
  // position; messages say what is wrong, the caller names the file.
  static Result<DeletionVector> Deserialize(std::string_view blob);

  // A vector holding `positions` (any order, duplicates allowed; each >= 0).
  static DeletionVector FromPositions(std::vector<int64_t> positions);

  // The blob as the spec frames it. Containers take the smallest of the portable format's
  // three shapes (array, bitset, runs), as CRoaring's run-optimised bitmaps do.
  std::string Serialize() const;

  int64_t cardinality() const { return cardinality_; }
  bool empty() const { return cardinality_ == 0; }
  bool Contains(int64_t position) const;
  // The largest position; -1 when empty.
  int64_t max() const;
  // Bytes the decoded vector holds in memory (for cache bounds).
  int64_t memory_bytes() const;
  // Calls `fn` with every position, ascending.
  void ForEach(const std::function<void(int64_t)>& fn) const;

  class Prober;

 private:
  enum class Shape : uint8_t { kArray, kBitset, kRuns };
  // One 2^16-value block of a 32-bit bitmap. kArray: sorted values; kBitset: 1024 words;
  // kRuns: (start, length - 1) pairs, sorted and disjoint.
  struct Container {
    uint16_t key = 0;
    Shape shape = Shape::kArray;
    std::vector<uint16_t> values;
    std::vector<uint64_t> words;
    int32_t cardinality = 0;
    bool Contains(uint16_t low) const;
  };
  struct Bitmap32 {
    uint32_t key = 0;
    std::vector<Container> containers;  // by ascending key
  };

  std::vector<Bitmap32> bitmaps_;  // by ascending key
  int64_t cardinality_ = 0;
};

// Contains for many positions in a row, as a scan asks: the 65536-position block of the last
// position is remembered, so positions of one block cost one container test each. Borrows the
// vector. Thread-compatible (one per thread).
class DeletionVector::Prober {
 public:
  explicit Prober(const DeletionVector& vector) : vector_(&vector) {}
  bool Contains(int64_t position) {
    if (position < 0) return false;
    const int64_t block = position >> 16;
    if (block != block_) Seek(block);
    if (container_ == nullptr) return false;
    const auto low = static_cast<uint16_t>(position & 0xFFFF);
    if (container_->shape == Shape::kBitset) return (container_->words[low >> 6] >> (low & 63)) & 1;
    return container_->Contains(low);
  }

 private:
  void Seek(int64_t block);
  const DeletionVector* vector_;
  int64_t block_ = -1;
  const Container* container_ = nullptr;  // of block_; null when it holds no position
};

}  // namespace skade::iceberg
