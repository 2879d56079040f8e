#include "skade/engine/input_check.h"

#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "skade/io/reserved_files.h"

namespace skade::engine {
namespace {

constexpr size_t kChunk = 1 << 16;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Feeds the file's decompressed bytes to `consume` chunk by chunk; `consume` returning false
// stops early.
Status ForEachChunk(const std::string& path, const std::function<bool(const char*, size_t)>& consume) {
  SKADE_RETURN_IF_ERROR(io::CheckNotReserved(path, "input file"));
  if (EndsWith(path, ".zst")) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!file) return Status::IoError("open '" + path + "': " + std::strerror(errno));
    std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> stream(ZSTD_createDStream(), ZSTD_freeDStream);
    std::vector<char> in(ZSTD_DStreamInSize()), out(ZSTD_DStreamOutSize());
    while (size_t n = std::fread(in.data(), 1, in.size(), file.get())) {
      ZSTD_inBuffer input = {in.data(), n, 0};
      while (input.pos < input.size) {
        ZSTD_outBuffer output = {out.data(), out.size(), 0};
        size_t rc = ZSTD_decompressStream(stream.get(), &output, &input);
        if (ZSTD_isError(rc)) return Status::InvalidArgument("'" + path + "' is not valid zstd: " + ZSTD_getErrorName(rc));
        if (!consume(out.data(), output.pos)) return Status::Ok();
      }
    }
    return Status::Ok();
  }
  // gzread reads plain files as they are, and .gz files decompressed.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) return Status::IoError("open '" + path + "': " + std::strerror(errno));
  std::vector<char> buffer(kChunk);
  while (true) {
    int n = gzread(file.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      return Status::InvalidArgument("read '" + path + "': " + (message ? message : "gzip error"));
    }
    if (n == 0) return Status::Ok();
    if (!consume(buffer.data(), static_cast<size_t>(n))) return Status::Ok();
  }
}

}  // namespace

Status CheckJsonDepth(const std::string& path, int max_depth) {
  int depth = 0;
  int64_t line = 1;
  bool in_string = false;
  bool escaped = false;
  Status too_deep;
  SKADE_RETURN_IF_ERROR(ForEachChunk(path, [&](const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      char c = data[i];
      if (c == '\n') ++line;
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > max_depth) {
          too_deep = Status::InvalidArgument("'" + path + "' nests arrays/objects deeper than " +
                                             std::to_string(max_depth) + " levels (line " + std::to_string(line) +
                                             ")");
          return false;
        }
      } else if (c == ']' || c == '}') {
        if (depth > 0) --depth;  // unbalanced input is for the JSON reader to report
      }
    }
    return true;
  }));
  return too_deep;
}

Status DiagnoseCsv(const std::string& path, char delimiter) {
  int64_t line = 1;            // current physical line
  int64_t record_line = 1;     // where the current record started
  int64_t quote_line = 0;      // where the open quote started
  int64_t fields = 1;          // fields of the current record so far
  int64_t header_fields = -1;  // fields of the first record
  bool in_quotes = false;
  bool quote_pending = false;  // a '"' inside quotes: either the closing quote or half of ""
  bool at_record_start = true;
  Status broken;
  auto end_record = [&]() -> bool {
    if (at_record_start) return true;  // an empty line
    if (header_fields < 0) {
      header_fields = fields;
    } else if (fields != header_fields) {
      broken = Status::InvalidArgument("'" + path + "' line " + std::to_string(record_line) + " has " +
                                       std::to_string(fields) + " fields; the header has " +
                                       std::to_string(header_fields));
      return false;
    }
    fields = 1;
    at_record_start = true;
    return true;
  };
  SKADE_RETURN_IF_ERROR(ForEachChunk(path, [&](const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      char c = data[i];
      if (in_quotes) {
        if (quote_pending) {
          quote_pending = false;
          if (c == '"') continue;  // "" is a quote character
          in_quotes = false;       // the quote closed; handle `c` below
        } else if (c == '"') {
          quote_pending = true;
          continue;
        } else {
          if (c == '\n') ++line;
          continue;
        }
      }
      if (c == '\r') continue;
      if (c == '\n') {
        if (!end_record()) return false;
        ++line;
        record_line = line;
        continue;
      }
      if (at_record_start) {
        at_record_start = false;
        record_line = line;
      }
      if (c == delimiter) {
        ++fields;
      } else if (c == '"') {
        in_quotes = true;
        quote_line = line;
      }
    }
    return true;
  }));
  if (!broken.ok()) return broken;
  if (in_quotes && !quote_pending) {
    return Status::InvalidArgument("'" + path + "' line " + std::to_string(quote_line) + " opens a quote that is never closed");
  }
  end_record();
  return broken;
}

}  // namespace skade::engine
