#include "skade/iceberg/deletion_vector.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace skade::iceberg {
namespace {

// Roaring "portable" format constants (RoaringFormatSpec).
constexpr uint32_t kCookieNoRuns = 12346;
constexpr uint32_t kCookieRuns = 12347;
constexpr size_t kNoOffsetThreshold = 4;  // run-cookie bitmaps with fewer containers have no offsets
constexpr int32_t kMaxArray = 4096;       // larger non-run containers are bitsets
constexpr size_t kBitsetWords = 1024;
constexpr unsigned char kMagic[4] = {0xD1, 0xD3, 0x39, 0x64};

Status Bad(const std::string& what) { return Status::Corruption("deletion vector: " + what); }

// Little-endian reader over the vector bytes; every read checks the bytes are there.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  size_t remaining() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }
  template <typename T>
  bool Read(T* out) {
    if (remaining() < sizeof(T)) return false;
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<T>(static_cast<T>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i));
    }
    pos_ += sizeof(T);
    *out = v;
    return true;
  }
  const char* here() const { return data_.data() + pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

template <typename T>
void PutLE(std::string* out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF));
}
void PutBE32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t GetBE32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

uint32_t Crc32(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes a uInt length; the caller's blob is far below 4 GiB but loop to be exact.
  size_t done = 0;
  while (done < bytes.size()) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes.size() - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), n);
    done += n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

bool DeletionVector::Container::Contains(uint16_t low) const {
  switch (shape) {
    case Shape::kArray:
      return std::binary_search(values.begin(), values.end(), low);
    case Shape::kBitset:
      return (words[low >> 6] >> (low & 63)) & 1;
    case Shape::kRuns: {
      // values holds start0, len0, start1, len1, …: find the last run starting at or before low.
      size_t lo = 0, hi = values.size() / 2;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (values[2 * mid] <= low) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo == 0) return false;
      const uint32_t start = values[2 * (lo - 1)], length = values[2 * (lo - 1) + 1];
      return low <= start + length;
    }
  }
  return false;
}

Result<DeletionVector> DeletionVector::Deserialize(std::string_view blob) {
  if (blob.size() < 12) return Bad("the blob has " + std::to_string(blob.size()) + " bytes, fewer than its framing needs (12)");
  const uint32_t length = GetBE32(blob, 0);
  if (static_cast<uint64_t>(length) + 8 != blob.size()) {
    return Bad("its length field says " + std::to_string(length) + " bytes of magic and vector, the blob holds " +
               std::to_string(blob.size() - 8));
  }
  if (std::memcmp(blob.data() + 4, kMagic, 4) != 0) return Bad("wrong magic (expected D1 D3 39 64)");
  const std::string_view body = blob.substr(4, length);  // magic + vector
  const uint32_t stored_crc = GetBE32(blob, 4 + length);
  if (Crc32(body) != stored_crc) return Bad("CRC-32 mismatch: the blob is damaged");

  DeletionVector dv;
  Reader r(body.substr(4));
  uint64_t count = 0;
  if (!r.Read(&count)) return Bad("truncated before the bitmap count");
  int64_t previous_key = -1;
  for (uint64_t b = 0; b < count; ++b) {
    Bitmap32 bitmap;
    if (!r.Read(&bitmap.key)) return Bad("truncated before bitmap " + std::to_string(b) + "'s key");
    if (static_cast<int64_t>(bitmap.key) <= previous_key) return Bad("bitmap keys are not in ascending order");
    if (bitmap.key > 0x7FFFFFFFu) return Bad("a position has its most significant bit set (negative)");
    previous_key = bitmap.key;

    uint32_t cookie = 0;
    if (!r.Read(&cookie)) return Bad("truncated before a bitmap cookie");
    size_t size = 0;
    bool has_runs = false;
    std::vector<unsigned char> run_flags;
    if ((cookie & 0xFFFF) == kCookieRuns) {
      has_runs = true;
      size = (cookie >> 16) + 1;
      run_flags.resize((size + 7) / 8);
      for (auto& f : run_flags) {
        if (!r.Read(&f)) return Bad("truncated in a run-container bitset");
      }
    } else if (cookie == kCookieNoRuns) {
      uint32_t n = 0;
      if (!r.Read(&n)) return Bad("truncated before a container count");
      if (n > 65536) return Bad("a 32-bit bitmap claims " + std::to_string(n) + " containers (at most 65536)");
      size = n;
    } else {
      return Bad("unknown Roaring cookie " + std::to_string(cookie));
    }
    if (r.remaining() < size * 4) return Bad("truncated in a container header");
    std::vector<std::pair<uint16_t, int32_t>> header(size);
    int32_t previous_container = -1;
    for (auto& [key, card] : header) {
      uint16_t card_minus_one = 0;
      r.Read(&key);
      r.Read(&card_minus_one);
      card = static_cast<int32_t>(card_minus_one) + 1;
      if (static_cast<int32_t>(key) <= previous_container) return Bad("container keys are not in ascending order");
      previous_container = key;
    }
    if ((!has_runs || size >= kNoOffsetThreshold) && !r.Skip(size * 4)) return Bad("truncated in a container offset header");
    bitmap.containers.resize(size);
    for (size_t i = 0; i < size; ++i) {
      Container& c = bitmap.containers[i];
      c.key = header[i].first;
      c.cardinality = header[i].second;
      const bool is_run = has_runs && ((run_flags[i / 8] >> (i % 8)) & 1);
      if (is_run) {
        c.shape = Shape::kRuns;
        uint16_t runs = 0;
        if (!r.Read(&runs)) return Bad("truncated before a run count");
        if (r.remaining() < size_t{runs} * 4) return Bad("truncated in a run container");
        c.values.resize(size_t{runs} * 2);
        int64_t total = 0, next_free = 0;
        for (uint16_t k = 0; k < runs; ++k) {
          r.Read(&c.values[2 * k]);
          r.Read(&c.values[2 * k + 1]);
          const int64_t s = c.values[2 * k], len = int64_t{c.values[2 * k + 1]} + 1;
          if (s < next_free || s + len > 65536) return Bad("run container runs overlap, are unsorted or pass 65535");
          next_free = s + len;
          total += len;
        }
        if (total != c.cardinality) return Bad("a run container's runs hold " + std::to_string(total) + " values, its header says " + std::to_string(c.cardinality));
      } else if (c.cardinality <= kMaxArray) {
        c.shape = Shape::kArray;
        if (r.remaining() < size_t(c.cardinality) * 2) return Bad("truncated in an array container");
        c.values.resize(c.cardinality);
        int32_t previous = -1;
        for (auto& v : c.values) {
          r.Read(&v);
          if (static_cast<int32_t>(v) <= previous) return Bad("array container values are not strictly ascending");
          previous = v;
        }
      } else {
        c.shape = Shape::kBitset;
        if (r.remaining() < kBitsetWords * 8) return Bad("truncated in a bitset container");
        c.words.resize(kBitsetWords);
        int64_t total = 0;
        for (auto& w : c.words) {
          r.Read(&w);
          total += std::popcount(w);
        }
        if (total != c.cardinality) return Bad("a bitset container holds " + std::to_string(total) + " values, its header says " + std::to_string(c.cardinality));
      }
      dv.cardinality_ += c.cardinality;
    }
    if (!bitmap.containers.empty()) dv.bitmaps_.push_back(std::move(bitmap));
  }
  if (r.remaining() != 0) return Bad(std::to_string(r.remaining()) + " unexpected byte(s) after the bitmap");
  return dv;
}

DeletionVector DeletionVector::FromPositions(std::vector<int64_t> positions) {
  // Position delete files and scans give them sorted already.
  if (!std::is_sorted(positions.begin(), positions.end())) std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  DeletionVector dv;
  size_t i = 0;
  while (i < positions.size()) {
    const uint64_t high48 = static_cast<uint64_t>(positions[i]) >> 16;
    size_t j = i;
    std::vector<uint16_t> lows;
    while (j < positions.size() && (static_cast<uint64_t>(positions[j]) >> 16) == high48) {
      lows.push_back(static_cast<uint16_t>(positions[j] & 0xFFFF));
      ++j;
    }
    const uint32_t key32 = static_cast<uint32_t>(high48 >> 16);
    if (dv.bitmaps_.empty() || dv.bitmaps_.back().key != key32) dv.bitmaps_.push_back(Bitmap32{key32, {}});
    Container c;
    c.key = static_cast<uint16_t>(high48 & 0xFFFF);
    c.cardinality = static_cast<int32_t>(lows.size());
    // Runs, then the smallest shape in serialised bytes.
    std::vector<uint16_t> runs;
    for (size_t k = 0; k < lows.size();) {
      size_t e = k;
      while (e + 1 < lows.size() && lows[e + 1] == lows[e] + 1) ++e;
      runs.push_back(lows[k]);
      runs.push_back(static_cast<uint16_t>(e - k));
      k = e + 1;
    }
    const size_t run_bytes = 2 + runs.size() * 2;
    const size_t plain_bytes = c.cardinality <= kMaxArray ? size_t(c.cardinality) * 2 : kBitsetWords * 8;
    if (run_bytes < plain_bytes) {
      c.shape = Shape::kRuns;
      c.values = std::move(runs);
    } else if (c.cardinality <= kMaxArray) {
      c.shape = Shape::kArray;
      c.values = std::move(lows);
    } else {
      c.shape = Shape::kBitset;
      c.words.assign(kBitsetWords, 0);
      for (uint16_t v : lows) c.words[v >> 6] |= uint64_t{1} << (v & 63);
    }
    dv.cardinality_ += c.cardinality;
    dv.bitmaps_.back().containers.push_back(std::move(c));
    i = j;
  }
  return dv;
}

std::string DeletionVector::Serialize() const {
  std::string vector;
  PutLE<uint64_t>(&vector, bitmaps_.size());
  for (const Bitmap32& b : bitmaps_) {
    PutLE<uint32_t>(&vector, b.key);
    const size_t size = b.containers.size();
    const size_t start = vector.size();
    const bool has_runs = std::any_of(b.containers.begin(), b.containers.end(),
                                      [](const Container& c) { return c.shape == Shape::kRuns; });
    if (has_runs) {
      PutLE<uint32_t>(&vector, kCookieRuns | static_cast<uint32_t>((size - 1) << 16));
      std::string flags((size + 7) / 8, '\0');
      for (size_t i = 0; i < size; ++i) {
        if (b.containers[i].shape == Shape::kRuns) flags[i / 8] = static_cast<char>(flags[i / 8] | (1 << (i % 8)));
      }
      vector += flags;
    } else {
      PutLE<uint32_t>(&vector, kCookieNoRuns);
      PutLE<uint32_t>(&vector, static_cast<uint32_t>(size));
    }
    for (const Container& c : b.containers) {
      PutLE<uint16_t>(&vector, c.key);
      PutLE<uint16_t>(&vector, static_cast<uint16_t>(c.cardinality - 1));
    }
    const bool offsets = !has_runs || size >= kNoOffsetThreshold;
    const size_t offsets_at = vector.size();
    if (offsets) vector.append(size * 4, '\0');
    for (size_t i = 0; i < size; ++i) {
      const Container& c = b.containers[i];
      if (offsets) {
        const uint32_t off = static_cast<uint32_t>(vector.size() - start);
        for (size_t k = 0; k < 4; ++k) vector[offsets_at + i * 4 + k] = static_cast<char>((off >> (8 * k)) & 0xFF);
      }
      if (c.shape == Shape::kRuns) PutLE<uint16_t>(&vector, static_cast<uint16_t>(c.values.size() / 2));
      if (c.shape == Shape::kBitset) {
        for (uint64_t w : c.words) PutLE<uint64_t>(&vector, w);
      } else {
        for (uint16_t v : c.values) PutLE<uint16_t>(&vector, v);
      }
    }
  }
  std::string body(reinterpret_cast<const char*>(kMagic), 4);
  body += vector;
  std::string blob;
  PutBE32(&blob, static_cast<uint32_t>(body.size()));
  blob += body;
  PutBE32(&blob, Crc32(body));
  return blob;
}

bool DeletionVector::Contains(int64_t position) const { return Prober(*this).Contains(position); }

void DeletionVector::Prober::Seek(int64_t block) {
  block_ = block;
  container_ = nullptr;
  const uint32_t key = static_cast<uint32_t>(static_cast<uint64_t>(block) >> 16);
  const auto& bitmaps = vector_->bitmaps_;
  auto b = std::lower_bound(bitmaps.begin(), bitmaps.end(), key, [](const Bitmap32& x, uint32_t k) { return x.key < k; });
  if (b == bitmaps.end() || b->key != key) return;
  const uint16_t high = static_cast<uint16_t>(block & 0xFFFF);
  auto c = std::lower_bound(b->containers.begin(), b->containers.end(), high,
                            [](const Container& x, uint16_t k) { return x.key < k; });
  if (c != b->containers.end() && c->key == high) container_ = &*c;
}

int64_t DeletionVector::max() const {
  int64_t last = -1;
  if (bitmaps_.empty()) return last;
  // Only the last container of the last bitmap can hold the largest position.
  const Bitmap32& b = bitmaps_.back();
  const Container& c = b.containers.back();
  const int64_t base = (static_cast<int64_t>(b.key) << 32) | (static_cast<int64_t>(c.key) << 16);
  switch (c.shape) {
    case Shape::kArray:
      last = base + c.values.back();
      break;
    case Shape::kRuns:
      last = base + c.values[c.values.size() - 2] + c.values.back();
      break;
    case Shape::kBitset:
      for (size_t w = kBitsetWords; w-- > 0;) {
        if (c.words[w] != 0) {
          last = base + static_cast<int64_t>(w * 64 + 63 - std::countl_zero(c.words[w]));
          break;
        }
      }
      break;
  }
  return last;
}

int64_t DeletionVector::memory_bytes() const {
  int64_t bytes = static_cast<int64_t>(sizeof(*this) + bitmaps_.capacity() * sizeof(Bitmap32));
  for (const Bitmap32& b : bitmaps_) {
    bytes += static_cast<int64_t>(b.containers.capacity() * sizeof(Container));
    for (const Container& c : b.containers) {
      bytes += static_cast<int64_t>(c.values.capacity() * sizeof(uint16_t) + c.words.capacity() * sizeof(uint64_t));
    }
  }
  return bytes;
}

void DeletionVector::ForEach(const std::function<void(int64_t)>& fn) const {
  for (const Bitmap32& b : bitmaps_) {
    for (const Container& c : b.containers) {
      const int64_t base = (static_cast<int64_t>(b.key) << 32) | (static_cast<int64_t>(c.key) << 16);
      switch (c.shape) {
        case Shape::kArray:
          for (uint16_t v : c.values) fn(base + v);
          break;
        case Shape::kRuns:
          for (size_t k = 0; k + 1 < c.values.size(); k += 2) {
            for (int64_t v = c.values[k]; v <= int64_t{c.values[k]} + c.values[k + 1]; ++v) fn(base + v);
          }
          break;
        case Shape::kBitset:
          for (size_t w = 0; w < kBitsetWords; ++w) {
            uint64_t word = c.words[w];
            while (word != 0) {
              fn(base + static_cast<int64_t>(w * 64 + std::countr_zero(word)));
              word &= word - 1;
            }
          }
          break;
      }
    }
  }
}

}  // namespace skade::iceberg
