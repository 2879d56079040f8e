#include "skade/iceberg/parquet_pages.h"

#include <libdeflate.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "skade/iceberg/thrift_compact.h"

namespace skade::iceberg {
namespace {

using thrift::CompactReader;
using thrift::CompactType;
using thrift::FieldHeader;
using thrift::ListHeader;

constexpr std::string_view kMagic = "PAR1";
// The magic of a file whose footer is encrypted (Parquet Modular Encryption).
constexpr std::string_view kEncryptedMagic = "PARE";
constexpr int64_t kTail = 8;                           // footer length (4 bytes LE) + magic
constexpr int64_t kBlock = int64_t{4} << 20;           // reads while checking a file's CRCs
constexpr int64_t kSmallBlock = int64_t{64} << 10;     // the footer guess, probes, bare headers
constexpr int64_t kMaxPageHeader = int64_t{64} << 20;  // a page header larger than this is damage
constexpr int kMaxProbePages = 4;
constexpr int64_t kMaxSchemaElements = 100'000;  // footer schema elements a report keeps

// parquet.thrift PageType.
constexpr int32_t kDataPage = 0;
constexpr int32_t kDictionaryPage = 2;
constexpr int32_t kDataPageV2 = 3;

Status Bad(std::string_view name, const std::string& what) {
  return Status::Corruption("Parquet file '" + std::string(name) + "': " + what);
}

// Where a check reads the file's bytes.
class Source {
 public:
  virtual ~Source() = default;
  virtual int64_t size() const = 0;
  // `length` bytes at `offset` (the caller keeps inside size()); valid until the next Read.
  virtual Result<std::string_view> Read(int64_t offset, int64_t length) = 0;
};

class MemorySource final : public Source {
 public:
  explicit MemorySource(std::string_view file) : file_(file) {}
  int64_t size() const override { return static_cast<int64_t>(file_.size()); }
  Result<std::string_view> Read(int64_t offset, int64_t length) override {
    return file_.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  }

 private:
  std::string_view file_;
};

class FileSource final : public Source {
 public:
  FileSource(io::FileIO& io, std::string_view location, int64_t size)
      : io_(io), location_(location), size_(size) {}
  int64_t size() const override { return size_; }
  Result<std::string_view> Read(int64_t offset, int64_t length) override {
    SKADE_ASSIGN_OR_RETURN(buffer_, io_.ReadRange(location_, offset, length));
    if (static_cast<int64_t>(buffer_.size()) != length) {
      return Status::IoError("short read of '" + location_ +
                             "': " + std::to_string(buffer_.size()) + " of " +
                             std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                             " (the file changed while it was read?)");
    }
    return std::string_view(buffer_);
  }

 private:
  io::FileIO& io_;
  const std::string location_;
  const int64_t size_;
  std::string buffer_;
};

// One column chunk as the footer describes it. The column's path stays in the footer's bytes
// (read again for messages only), so what is kept per chunk is small and fixed.
struct Chunk {
  int64_t row_group = 0;
  int64_t start = 0;   // first page (dictionary page when there is one)
  int64_t length = 0;  // total_compressed_size: every page with its header
  int64_t num_values = 0;
  size_t path_at = 0;  // the path_in_schema list, as a position in the footer's bytes
};

struct Footer {
  std::vector<ParquetSchemaElement> schema;
  int64_t row_groups = 0;
  int64_t column_chunks = 0;
  int64_t chunks_skipped = 0;
  std::vector<Chunk> chunks;  // in file order of the footer: row group by row group
};

// "a.b.c" from the path_in_schema list at `at` of the footer's bytes.
std::string ColumnPath(std::string_view footer, size_t at) {
  CompactReader r(footer.substr(at));
  const ListHeader list = r.ReadListHeader();
  std::string path;
  for (int64_t i = 0; i < list.size && r.ok(); ++i) {
    if (list.element != CompactType::kBinary) break;
    std::string_view part = r.ReadBinary();
    path += (i ? "." : "") + std::string(part);
  }
  return path.empty() ? "?" : path;
}

std::string Where(std::string_view footer, const Chunk& c) {
  return "row group " + std::to_string(c.row_group) + ", column '" + ColumnPath(footer, c.path_at) +
         "'";
}

// Reads an i32/i64 field value when the header has that type, else skips the value (Thrift's
// rule for a field of an unexpected type) and returns nullopt.
std::optional<int64_t> IntField(CompactReader& r, const FieldHeader& f) {
  if (f.type == CompactType::kI32) return r.ReadI32();
  if (f.type == CompactType::kI64) return r.ReadI64();
  r.SkipField(f.type);
  return std::nullopt;
}

// ColumnMetaData: the fields a page walk needs. False when a required one is missing.
bool ParseColumnMeta(CompactReader& r, Chunk& chunk) {
  std::optional<int64_t> num_values, total_compressed, data_page, dictionary_page;
  bool has_path = false;
  if (!r.BeginStruct()) return false;
  for (FieldHeader f = r.NextField(); f.type != CompactType::kStop; f = r.NextField()) {
    switch (f.id) {
      case 3:  // path_in_schema
        if (f.type == CompactType::kList) {
          chunk.path_at = r.position();
          has_path = true;
        }
        r.SkipField(f.type);
        break;
      case 5:
        num_values = IntField(r, f);
        break;
      case 7:
        total_compressed = IntField(r, f);
        break;
      case 9:
        data_page = IntField(r, f);
        break;
      case 11:
        dictionary_page = IntField(r, f);
        break;
      default:
        r.SkipField(f.type);
    }
  }
  r.EndStruct();
  if (!num_values || !total_compressed || !data_page || !has_path) return false;
  chunk.num_values = *num_values;
  chunk.length = *total_compressed;
  chunk.start = *data_page;
  // The dictionary page, when there is one, comes first; writers that have none may leave the
  // offset at 0 (readers have long ignored an offset that is not before the first data page).
  if (dictionary_page && *dictionary_page > 0 && *dictionary_page < chunk.start)
    chunk.start = *dictionary_page;
  return true;
}

// SchemaElement: name (4), num_children (5) and field_id (9). False when the name is missing.
bool ParseSchemaElement(CompactReader& r, ParquetSchemaElement& e) {
  bool named = false;
  if (!r.BeginStruct()) return false;
  for (FieldHeader f = r.NextField(); f.type != CompactType::kStop; f = r.NextField()) {
    if (f.id == 4 && f.type == CompactType::kBinary) {
      e.name = std::string(r.ReadBinary());
      named = true;
    } else if ((f.id == 5 || f.id == 9) && f.type == CompactType::kI32) {
      const int32_t v = r.ReadI32();
      if (f.id == 5) {
        e.num_children = v;
      } else {
        e.field_id = v;
      }
    } else {
      r.SkipField(f.type);
    }
  }
  r.EndStruct();
  return named;
}

Result<Footer> ParseFooter(std::string_view footer, std::string_view name, int64_t data_end) {
  Footer out;
  CompactReader r(footer);
  bool has_row_groups = false;
  std::string problem;
  auto fail_once = [&](std::string what) {
    if (problem.empty()) problem = std::move(what);
  };
  if (r.BeginStruct()) {
    for (FieldHeader f = r.NextField(); f.type != CompactType::kStop; f = r.NextField()) {
      if (f.id == 2 && f.type == CompactType::kList) {
        const ListHeader elements = r.ReadListHeader();
        // A schema past the bound is not kept (the report's schema stays empty): it is walked
        // over, so a hostile footer cannot make the check hold millions of names.
        const bool keep = elements.size <= kMaxSchemaElements;
        for (int64_t i = 0; i < elements.size && r.ok(); ++i) {
          if (!keep) {
            r.SkipElement(elements.element);
            continue;
          }
          if (elements.element != CompactType::kStruct) {
            r.SkipElement(elements.element);
            fail_once("schema element " + std::to_string(i) + " is not a struct");
            continue;
          }
          ParquetSchemaElement e;
          if (!ParseSchemaElement(r, e) && r.ok()) fail_once("schema element " + std::to_string(i) + " has no name");
          out.schema.push_back(std::move(e));
        }
        continue;
      }
      if (f.id != 4 || f.type != CompactType::kList) {
        r.SkipField(f.type);
        continue;
      }
      has_row_groups = true;
      const ListHeader groups = r.ReadListHeader();
      for (int64_t g = 0; g < groups.size && r.ok(); ++g) {
        if (groups.element != CompactType::kStruct) {
          r.SkipElement(groups.element);
          continue;
        }
        ++out.row_groups;
        if (!r.BeginStruct()) break;
        for (FieldHeader rf = r.NextField(); rf.type != CompactType::kStop; rf = r.NextField()) {
          if (rf.id != 1 || rf.type != CompactType::kList) {
            r.SkipField(rf.type);
            continue;
          }
          const ListHeader columns = r.ReadListHeader();
          for (int64_t c = 0; c < columns.size && r.ok(); ++c) {
            if (columns.element != CompactType::kStruct) {
              r.SkipElement(columns.element);
              continue;
            }
            ++out.column_chunks;
            Chunk chunk;
            chunk.row_group = g;
            bool has_meta = false, meta_ok = false, elsewhere = false;
            if (!r.BeginStruct()) break;
            for (FieldHeader cf = r.NextField(); cf.type != CompactType::kStop;
                 cf = r.NextField()) {
              if (cf.id == 3 && cf.type == CompactType::kStruct) {
                has_meta = true;
                meta_ok = ParseColumnMeta(r, chunk);
              } else {
                // 1: file_path (the chunk lives in another file); 8, 9: encrypted column.
                if (cf.id == 1 || cf.id == 8 || cf.id == 9) elsewhere = true;
                r.SkipField(cf.type);
              }
            }
            r.EndStruct();
            if (!r.ok()) break;
            if (elsewhere || !has_meta) {
              ++out.chunks_skipped;
              continue;
            }
            const std::string where =
                "row group " + std::to_string(g) + ", column " + std::to_string(c);
            if (!meta_ok) {
              fail_once(
                  where +
                  " has no num_values, total_compressed_size, data_page_offset or path_in_schema");
            } else if (chunk.start < static_cast<int64_t>(kMagic.size()) || chunk.length < 0 ||
                       chunk.start > data_end || chunk.length > data_end - chunk.start ||
                       chunk.num_values < 0) {
              fail_once(where + " ('" + ColumnPath(footer, chunk.path_at) + "') claims bytes " +
                        std::to_string(chunk.start) + " + " + std::to_string(chunk.length) +
                        " with " + std::to_string(chunk.num_values) +
                        " values; the pages end at byte " + std::to_string(data_end));
            } else {
              out.chunks.push_back(chunk);
            }
          }
        }
        r.EndStruct();
      }
    }
    r.EndStruct();
  }
  if (!r.ok()) return Bad(name, "the footer is damaged (" + r.message() + ")");
  if (!has_row_groups) return Bad(name, "the footer has no row_groups list");
  if (!problem.empty()) return Bad(name, "the footer is damaged: " + problem);
  return out;
}

// A page header, as far as a walk needs it.
struct PageHeader {
  std::optional<int64_t> type, uncompressed_size, compressed_size, num_values;
  std::optional<uint32_t> crc;
};

// Parses the nested data page header (v1 or v2): its field 1 is num_values.
std::optional<int64_t> DataPageValues(CompactReader& r) {
  std::optional<int64_t> values;
  if (!r.BeginStruct()) return values;
  for (FieldHeader f = r.NextField(); f.type != CompactType::kStop; f = r.NextField()) {
    if (f.id == 1) {
      values = IntField(r, f);
    } else {
      r.SkipField(f.type);
    }
  }
  r.EndStruct();
  return values;
}

PageHeader ParsePageHeader(CompactReader& r) {
  PageHeader h;
  if (!r.BeginStruct()) return h;
  for (FieldHeader f = r.NextField(); f.type != CompactType::kStop; f = r.NextField()) {
    switch (f.id) {
      case 1:
        h.type = IntField(r, f);
        break;
      case 2:
        h.uncompressed_size = IntField(r, f);
        break;
      case 3:
        h.compressed_size = IntField(r, f);
        break;
      case 4:
        if (f.type == CompactType::kI32) {
          h.crc = static_cast<uint32_t>(r.ReadI32());
        } else {
          r.SkipField(f.type);
        }
        break;
      case 5:  // data_page_header
      case 8:  // data_page_header_v2
        if (f.type == CompactType::kStruct) {
          h.num_values = DataPageValues(r);
        } else {
          r.SkipField(f.type);
        }
        break;
      default:
        r.SkipField(f.type);
    }
  }
  r.EndStruct();
  return h;
}

struct ChunkWalk {
  int64_t pages = 0;
  int64_t pages_with_crc = 0;
};

// Walks column chunks page by page over a Source, through one window of the file's bytes.
class Walker {
 public:
  Walker(Source& source, std::string_view name, std::string_view footer)
      : source_(source), name_(name), footer_(footer) {}

  // The reads of a file being checked are large: its pages' bytes are read anyway.
  void set_block(int64_t block) { block_ = block; }

  // Starts with bytes already read (the tail read that found the footer).
  void Seed(int64_t start, std::string_view bytes) {
    window_start_ = start;
    window_ = bytes;
  }

  // Every page of `chunk`, or (probe) its first pages up to and including the first data page
  // or the first page with a CRC.
  Result<ChunkWalk> Walk(const Chunk& chunk, bool probe) {
    ChunkWalk walk;
    const int64_t end = chunk.start + chunk.length;
    int64_t offset = chunk.start;
    int64_t values = 0;
    while (offset < end) {
      SKADE_ASSIGN_OR_RETURN(auto header, ReadHeader(chunk, offset, end));
      const auto& [h, header_size] = header;
      const int64_t data_start = offset + header_size;
      if (!h.type || !h.compressed_size || !h.uncompressed_size || *h.compressed_size < 0 ||
          *h.uncompressed_size < 0) {
        return Bad(name_, Where(footer_, chunk) + ": the page header at offset " +
                              std::to_string(offset) + " has no type or page sizes");
      }
      const int64_t data_end = data_start + *h.compressed_size;
      if (*h.compressed_size > end - data_start) {
        return Bad(name_, Where(footer_, chunk) + ": the page at offset " + std::to_string(offset) +
                              " (" + std::to_string(*h.compressed_size) + " bytes after a " +
                              std::to_string(header_size) +
                              "-byte header) runs past the end of its column chunk at byte " +
                              std::to_string(end));
      }
      const bool data_page = *h.type == kDataPage || *h.type == kDataPageV2;
      if (data_page) {
        if (!h.num_values || *h.num_values < 0) {
          return Bad(name_, Where(footer_, chunk) + ": the data page at offset " +
                                std::to_string(offset) +
                                " has no data page header with its value count");
        }
        values += *h.num_values;
      }
      ++walk.pages;
      if (h.crc) {
        // parquet.thrift PageHeader.crc: CRC-32 of the page's bytes as stored, after the header
        // (compressed, encrypted where it is): all of compressed_page_size, for data pages v1
        // and v2 (levels included) and dictionary pages alike.
        SKADE_ASSIGN_OR_RETURN(uint32_t computed, Crc(data_start, data_end, end));
        if (computed != *h.crc) {
          return Bad(name_, "page checksum mismatch in " + Where(footer_, chunk) + ", " +
                                PageKind(*h.type) + " at offset " + std::to_string(offset) +
                                " (stored CRC " + Hex(*h.crc) + ", computed " + Hex(computed) +
                                "): the file is damaged");
        }
        ++walk.pages_with_crc;
      }
      offset = data_end;
      if (probe && (h.crc || data_page || walk.pages >= kMaxProbePages)) return walk;
    }
    if (values != chunk.num_values) {
      return Bad(name_, Where(footer_, chunk) + ": its data pages hold " + std::to_string(values) +
                            " values, its metadata says " + std::to_string(chunk.num_values));
    }
    return walk;
  }

 private:
  static std::string Hex(uint32_t v) {
    static const char* kDigits = "0123456789abcdef";
    std::string out = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kDigits[(v >> shift) & 0xF]);
    return out;
  }

  static std::string PageKind(int64_t type) {
    switch (type) {
      case kDataPage:
        return "data page";
      case kDictionaryPage:
        return "dictionary page";
      case kDataPageV2:
        return "data page (v2)";
      default:
        return "page of type " + std::to_string(type);
    }
  }

  // At least min(want, end - offset) bytes from `offset` (more when the window holds more), never
  // past `end`.
  Result<std::string_view> Bytes(int64_t offset, int64_t want, int64_t end) {
    want = std::min(want, end - offset);
    if (offset >= window_start_ && offset - window_start_ <= static_cast<int64_t>(window_.size()) &&
        static_cast<int64_t>(window_.size()) - (offset - window_start_) >= want) {
      std::string_view v = window_.substr(static_cast<size_t>(offset - window_start_));
      return v.substr(
          0, static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(v.size()), end - offset)));
    }
    const int64_t length = std::min(end - offset, std::max(want, block_));
    SKADE_ASSIGN_OR_RETURN(window_, source_.Read(offset, length));
    window_start_ = offset;
    return window_;
  }

  // The header at `offset` and its size in bytes. A header cut off by the window is read again
  // with a window twice as large, up to the chunk's end or kMaxPageHeader.
  Result<std::pair<PageHeader, int64_t>> ReadHeader(const Chunk& chunk, int64_t offset,
                                                    int64_t end) {
    int64_t want = std::min<int64_t>(kSmallBlock, end - offset);
    while (true) {
      SKADE_ASSIGN_OR_RETURN(std::string_view bytes, Bytes(offset, want, end));
      CompactReader r(bytes);
      PageHeader h = ParsePageHeader(r);
      if (r.ok()) return std::make_pair(h, static_cast<int64_t>(r.position()));
      const int64_t have = static_cast<int64_t>(bytes.size());
      if (r.error() == thrift::ReadError::kTruncated && have < end - offset &&
          have < kMaxPageHeader) {
        want = std::min({end - offset, 2 * have, kMaxPageHeader});
        continue;
      }
      return Bad(name_, Where(footer_, chunk) + ": the page header at offset " +
                            std::to_string(offset) + " is damaged (" + r.message() + ")");
    }
  }

  Result<uint32_t> Crc(int64_t from, int64_t to, int64_t end) {
    uint32_t crc = 0;
    for (int64_t at = from; at < to;) {
      SKADE_ASSIGN_OR_RETURN(std::string_view bytes, Bytes(at, 1, end));
      const size_t n =
          static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(bytes.size()), to - at));
      crc = static_cast<uint32_t>(libdeflate_crc32(crc, bytes.data(), n));
      at += static_cast<int64_t>(n);
    }
    return crc;
  }

  Source& source_;
  std::string_view name_;
  std::string_view footer_;
  int64_t block_ = kSmallBlock;
  int64_t window_start_ = 0;
  std::string_view window_;
};

uint32_t LittleEndian32(std::string_view b) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(b[i])) << (8 * i);
  return v;
}

Result<ParquetPageReport> Check(Source& source, std::string_view name, PageScope scope) {
  ParquetPageReport report;
  const int64_t size = source.size();
  if (size < static_cast<int64_t>(kMagic.size()) + kTail) {
    return Bad(name, "it is too small to be a Parquet file (" + std::to_string(size) + " bytes)");
  }
  const int64_t tail_start = size - std::min(size, kSmallBlock);
  SKADE_ASSIGN_OR_RETURN(std::string_view tail, source.Read(tail_start, size - tail_start));
  const std::string_view magic = tail.substr(tail.size() - kMagic.size());
  if (magic == kEncryptedMagic) return report;  // the footer is ciphertext: nothing to walk
  if (magic != kMagic) return Bad(name, "it does not end with the magic bytes PAR1");
  const int64_t footer_size = LittleEndian32(tail.substr(tail.size() - kTail, 4));
  if (footer_size > size - kTail - static_cast<int64_t>(kMagic.size())) {
    return Bad(name, "its footer length (" + std::to_string(footer_size) +
                         " bytes) exceeds the file (" + std::to_string(size) + " bytes)");
  }
  const int64_t footer_start = size - kTail - footer_size;
  std::string footer;  // kept: the walk's reads replace the source's buffer
  if (footer_start >= tail_start) {
    footer.assign(tail.substr(static_cast<size_t>(footer_start - tail_start),
                              static_cast<size_t>(footer_size)));
  } else {
    SKADE_ASSIGN_OR_RETURN(std::string_view bytes, source.Read(footer_start, footer_size));
    footer.assign(bytes);
    tail = {};
  }
  SKADE_ASSIGN_OR_RETURN(Footer parsed, ParseFooter(footer, name, footer_start));
  report.row_groups = parsed.row_groups;
  report.column_chunks = parsed.column_chunks;
  report.chunks_skipped = parsed.chunks_skipped;
  report.schema = std::move(parsed.schema);

  Walker walker(source, name, footer);
  if (!tail.empty()) walker.Seed(tail_start, tail);  // a small file's pages may be in it already
  if (scope == PageScope::kWhereChecksummed && !parsed.chunks.empty()) {
    SKADE_ASSIGN_OR_RETURN(ChunkWalk probe, walker.Walk(parsed.chunks.front(), /*probe=*/true));
    if (probe.pages_with_crc == 0) {
      report.pages = probe.pages;
      return report;
    }
    walker.set_block(kBlock);
  }
  for (const Chunk& chunk : parsed.chunks) {
    SKADE_ASSIGN_OR_RETURN(ChunkWalk walk, walker.Walk(chunk, /*probe=*/false));
    report.pages += walk.pages;
    report.pages_with_crc += walk.pages_with_crc;
    // Once one page carries a CRC, the rest of the file's pages are read whole: large reads.
    if (report.pages_with_crc > 0) walker.set_block(kBlock);
  }
  report.all_pages = parsed.chunks_skipped == 0;
  return report;
}

}  // namespace

uint32_t ParquetCrc32(std::string_view bytes) {
  return static_cast<uint32_t>(libdeflate_crc32(0, bytes.data(), bytes.size()));
}

Result<ParquetPageReport> CheckParquetPages(io::FileIO& io, std::string_view location,
                                            PageScope scope) {
  SKADE_ASSIGN_OR_RETURN(io::FileInfo info, io.Stat(location));
  FileSource source(io, location, info.size);
  return Check(source, location, scope);
}

Result<ParquetPageReport> CheckParquetPagesInMemory(std::string_view file, std::string_view name,
                                                    PageScope scope) {
  MemorySource source(file);
  return Check(source, name, scope);
}

}  // namespace skade::iceberg
