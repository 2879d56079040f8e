// Arrow IPC stream encode/decode: the Arrow integration fixtures (decoded and compared with
// their JSON twins, then re-encoded), every DuckDB type, compression, and malformed input.
#include "skade/arrow/ipc.h"

#include <sys/mman.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "skade/engine/database.h"
#include "tests/arrow/ipc_message_builder.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::arrow::ipc {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = skade::testing::FixturePath("arrow-ipc");

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  if (f == nullptr) return out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

bool Bit(const void* bits, int64_t i) {
  return (static_cast<const uint8_t*>(bits)[i >> 3] >> (i & 7)) & 1;
}

std::string Hex(const uint8_t* p, int64_t n) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string s;
  for (int64_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

std::string Int128String(const uint8_t* p, int width_bytes) {
  __int128 v = 0;
  if (width_bytes == 16) {
    std::memcpy(&v, p, 16);
  } else {
    int64_t x = 0;
    std::memcpy(&x, p, 8);
    v = x;
  }
  bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u != 0);
  return neg ? "-" + s : s;
}

template <typename T>
T Load(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

// Renders elements [start, start + length) (buffer indices, offset included) of an array in
// the Arrow integration JSON column form (VALIDITY, OFFSET, DATA, children).
Json ToJson(const ArrowSchema& s, const ArrowArray& a, int64_t start, int64_t length) {
  std::string f = s.format;
  Json col;
  col["name"] = s.name ? s.name : "";
  col["count"] = length;
  if (f == "n") return col;
  Json validity = Json::array();
  for (int64_t i = 0; i < length; ++i) {
    bool valid = a.null_count == 0 || a.buffers[0] == nullptr || Bit(a.buffers[0], start + i);
    validity.push_back(valid ? 1 : 0);
  }
  col["VALIDITY"] = validity;
  const void* data = a.n_buffers > 1 ? a.buffers[1] : nullptr;
  Json values = Json::array();
  auto offsets_json = [&](bool wide, int64_t& first, int64_t& last) {
    Json offs = Json::array();
    first = wide ? Load<int64_t>(data, start) : Load<int32_t>(data, start);
    for (int64_t i = 0; i <= length; ++i) {
      int64_t o = (wide ? Load<int64_t>(data, start + i) : Load<int32_t>(data, start + i)) - first;
      if (wide) offs.push_back(std::to_string(o)); else offs.push_back(o);
      last = o + first;
    }
    return offs;
  };
  if (s.dictionary != nullptr || f.size() == 1 || f.substr(0, 2) == "td" || f.substr(0, 2) == "tt" ||
      f.substr(0, 2) == "ts" || f.substr(0, 2) == "tD" || f.substr(0, 2) == "ti" ||
      f.substr(0, 2) == "d:" || f.substr(0, 2) == "w:") {
    if (f == "u" || f == "z" || f == "U" || f == "Z") {
      bool wide = f == "U" || f == "Z";
      int64_t first = 0, last = 0;
      col["OFFSET"] = offsets_json(wide, first, last);
      for (int64_t i = 0; i < length; ++i) {
        int64_t b = wide ? Load<int64_t>(data, start + i) : Load<int32_t>(data, start + i);
        int64_t e = wide ? Load<int64_t>(data, start + i + 1) : Load<int32_t>(data, start + i + 1);
        const auto* p = static_cast<const uint8_t*>(a.buffers[2]) + b;
        if (f == "u" || f == "U") values.push_back(std::string(reinterpret_cast<const char*>(p), e - b));
        else values.push_back(Hex(p, e - b));
      }
      col["DATA"] = values;
      return col;
    }
    for (int64_t i = 0; i < length; ++i) {
      int64_t k = start + i;
      if (f == "b") values.push_back(Bit(data, k));
      else if (f == "c") values.push_back(Load<int8_t>(data, k));
      else if (f == "C") values.push_back(Load<uint8_t>(data, k));
      else if (f == "s") values.push_back(Load<int16_t>(data, k));
      else if (f == "S") values.push_back(Load<uint16_t>(data, k));
      else if (f == "i" || f == "tdD" || f == "tts" || f == "ttm" || f == "tiM") values.push_back(Load<int32_t>(data, k));
      else if (f == "I") values.push_back(Load<uint32_t>(data, k));
      else if (f == "l" || f == "tdm" || f == "ttu" || f == "ttn" || f.substr(0, 2) == "ts" || f.substr(0, 2) == "tD")
        values.push_back(std::to_string(Load<int64_t>(data, k)));
      else if (f == "L") values.push_back(std::to_string(Load<uint64_t>(data, k)));
      else if (f == "f") values.push_back(Load<float>(data, k));
      else if (f == "g") values.push_back(Load<double>(data, k));
      else if (f == "tiD") values.push_back({{"days", Load<int32_t>(data, 2 * k)}, {"milliseconds", Load<int32_t>(data, 2 * k + 1)}});
      else if (f == "tin") {
        const auto* p = static_cast<const uint8_t*>(data) + k * 16;
        values.push_back({{"months", Load<int32_t>(p, 0)}, {"days", Load<int32_t>(p, 1)},
                          {"nanoseconds", std::to_string(Load<int64_t>(p + 8, 0))}});
      } else if (f.substr(0, 2) == "w:") {
        int64_t w = std::stoll(f.substr(2));
        values.push_back(Hex(static_cast<const uint8_t*>(data) + k * w, w));
      } else if (f.substr(0, 2) == "d:") {
        int w = f.find(",64") != std::string::npos && f.rfind(',') != f.find(',') ? 8 : 16;
        values.push_back(Int128String(static_cast<const uint8_t*>(data) + k * w, w));
      } else {
        ADD_FAILURE() << "no JSON rendering for " << f;
        break;
      }
    }
    col["DATA"] = values;
    return col;
  }
  if (f == "vu" || f == "vz") {
    for (int64_t i = 0; i < length; ++i) {
      const auto* v = static_cast<const uint8_t*>(data) + (start + i) * 16;
      int32_t size = Load<int32_t>(v, 0);
      const uint8_t* p = v + 4;
      if (size > 12) {
        p = static_cast<const uint8_t*>(a.buffers[2 + Load<int32_t>(v + 8, 0)]) + Load<int32_t>(v + 12, 0);
      }
      if (f == "vu") values.push_back(std::string(reinterpret_cast<const char*>(p), size));
      else values.push_back(Hex(p, size));
    }
    col["DATA"] = values;
    return col;
  }
  Json children = Json::array();
  if (f == "+l" || f == "+L" || f == "+m") {
    bool wide = f == "+L";
    int64_t first = 0, last = 0;
    col["OFFSET"] = offsets_json(wide, first, last);
    const ArrowArray& c = *a.children[0];
    children.push_back(ToJson(*s.children[0], c, c.offset + first, last - first));
  } else if (f == "+s") {
    for (int64_t i = 0; i < s.n_children; ++i) {
      const ArrowArray& c = *a.children[i];
      children.push_back(ToJson(*s.children[i], c, c.offset + start - a.offset, length));
    }
  } else if (f.substr(0, 3) == "+w:") {
    int64_t n = std::stoll(f.substr(3));
    const ArrowArray& c = *a.children[0];
    children.push_back(ToJson(*s.children[0], c, c.offset + (start - a.offset) * n, length * n));
  } else {
    ADD_FAILURE() << "no JSON rendering for " << f;
  }
  col["children"] = children;
  return col;
}

// Compares a rendered column with an integration-JSON column (floats approximately).
void ExpectColumnEq(const Json& want, const Json& got, const std::string& where) {
  ASSERT_EQ(want.value("count", -1), got.value("count", -2)) << where;
  if (want.contains("VALIDITY")) {
    EXPECT_EQ(want["VALIDITY"], got["VALIDITY"]) << where;
  }
  if (want.contains("OFFSET")) {
    const Json& wo = want["OFFSET"];
    const Json& go = got["OFFSET"];
    ASSERT_EQ(wo.size(), go.size()) << where;
    for (size_t i = 0; i < wo.size(); ++i) {
      std::string a = wo[i].is_string() ? wo[i].get<std::string>() : wo[i].dump();
      std::string b = go[i].is_string() ? go[i].get<std::string>() : go[i].dump();
      EXPECT_EQ(a, b) << where << " offset " << i;
    }
  }
  if (want.contains("DATA")) {
    const Json& wd = want["DATA"];
    const Json& gd = got["DATA"];
    ASSERT_EQ(wd.size(), gd.size()) << where;
    for (size_t i = 0; i < wd.size(); ++i) {
      bool valid = !want.contains("VALIDITY") || want["VALIDITY"][i] == 1;
      if (!valid) continue;  // values under nulls are unspecified
      if (wd[i].is_number_float() || (wd[i].is_number() && gd[i].is_number_float())) {
        double a = wd[i].get<double>(), b = gd[i].get<double>();
        EXPECT_NEAR(a, b, 1e-3 * std::max(1.0, std::fabs(a))) << where << " value " << i;
      } else {
        EXPECT_EQ(wd[i], gd[i]) << where << " value " << i;
      }
    }
  }
  if (want.contains("children")) {
    ASSERT_EQ(want["children"].size(), got["children"].size()) << where;
    for (size_t i = 0; i < want["children"].size(); ++i) {
      ExpectColumnEq(want["children"][i], got["children"][i], where + "." + std::to_string(i));
    }
  }
}

struct Decoded {
  SchemaHandle schema;
  std::vector<ArrayHandle> batches;
};

Result<Decoded> DecodeAll(std::string bytes) {
  SKADE_ASSIGN_OR_RETURN(auto reader, StreamReader::Open(std::move(bytes)));
  Decoded out;
  SKADE_ASSIGN_OR_RETURN(out.schema, reader->ExportSchema());
  while (true) {
    SKADE_ASSIGN_OR_RETURN(std::optional<ArrayHandle> batch, reader->Next());
    if (!batch) break;
    out.batches.push_back(std::move(*batch));
  }
  return out;
}

// The whole decoded stream rendered as JSON (one entry per batch and column).
Json Render(const Decoded& d) {
  Json out = Json::array();
  for (const ArrayHandle& b : d.batches) {
    Json cols = Json::array();
    for (int64_t i = 0; i < d.schema->n_children; ++i) {
      const ArrowArray& c = *b->children[i];
      cols.push_back(ToJson(*d.schema->children[i], c, c.offset + b->offset, b->length));
      if (d.schema->children[i]->dictionary != nullptr) {
        const ArrowArray& dict = *c.dictionary;
        cols.back()["dictionary"] = ToJson(*d.schema->children[i]->dictionary, dict, dict.offset, dict.length);
      }
    }
    out.push_back(cols);
  }
  return out;
}

// Re-encodes decoded batches (moving them into the encoder) into one stream.
Result<std::string> Encode(Decoded d, EncodeOptions options) {
  SKADE_ASSIGN_OR_RETURN(auto encoder, StreamEncoder::Make(*d.schema.get(), options));
  std::vector<EncodedMessage> messages = {encoder->SchemaMessage()};
  for (ArrayHandle& b : d.batches) {
    SKADE_ASSIGN_OR_RETURN(std::vector<EncodedMessage> m, encoder->EncodeBatch(std::move(b)));
    for (auto& x : m) messages.push_back(std::move(x));
  }
  std::string out = Concatenate(messages);
  out += EndOfStreamMarker();
  return out;
}

std::vector<std::string> FixtureStreams() {
  std::vector<std::string> out;
  for (const char* dir : {"1.0.0-littleendian", "2.0.0-compression"}) {
    for (const auto& e : fs::directory_iterator(kFixtures + "/" + dir)) {
      if (e.path().extension() == ".stream") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void CheckAgainstJson(const std::string& stream_path, const Decoded& d) {
  std::string json_path = stream_path.substr(0, stream_path.size() - 7) + ".json.gz";
  Json want = Json::parse(Gunzip(json_path));
  const Json& fields = want["schema"]["fields"];
  ASSERT_EQ(static_cast<int64_t>(fields.size()), d.schema->n_children) << stream_path;
  for (size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ(fields[i]["name"].get<std::string>(), d.schema->children[i]->name);
    EXPECT_EQ(fields[i]["nullable"].get<bool>(), (d.schema->children[i]->flags & ARROW_FLAG_NULLABLE) != 0);
  }
  ASSERT_EQ(want["batches"].size(), d.batches.size()) << stream_path;
  Json got = Render(d);
  for (size_t b = 0; b < d.batches.size(); ++b) {
    const Json& wb = want["batches"][b];
    EXPECT_EQ(wb["count"].get<int64_t>(), d.batches[b]->length);
    for (size_t c = 0; c < fields.size(); ++c) {
      std::string where = fs::path(stream_path).filename().string() + " batch " + std::to_string(b) +
                          " column " + fields[c]["name"].get<std::string>();
      ExpectColumnEq(wb["columns"][c], got[b][c], where);
      if (fields[c].contains("dictionary")) {
        int64_t id = fields[c]["dictionary"]["id"];
        for (const Json& dict : want["dictionaries"]) {
          if (dict["id"] == id) ExpectColumnEq(dict["data"]["columns"][0], got[b][c]["dictionary"], where + " dictionary");
        }
      }
    }
  }
}

TEST(StreamReaderTest, DecodesIntegrationFixturesLikeTheirJson) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::vector<std::string> streams = FixtureStreams();
  ASSERT_GE(streams.size(), 11u);
  for (const std::string& path : streams) {
    SCOPED_TRACE(path);
    Result<Decoded> d = DecodeAll(ReadFile(path));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    CheckAgainstJson(path, *d);
  }
}

TEST(StreamEncoderTest, FixturesRoundTripWithAndWithoutCompression) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  for (const std::string& path : FixtureStreams()) {
    for (Compression c : {Compression::kNone, Compression::kLz4Frame, Compression::kZstd}) {
      SCOPED_TRACE(path + " codec " + std::to_string(static_cast<int>(c)));
      Result<Decoded> d = DecodeAll(ReadFile(path));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      Json before = Render(*d);
      Result<std::string> bytes = Encode(std::move(*d), {c});
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      Result<Decoded> again = DecodeAll(*bytes);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(before, Render(*again));
      CheckAgainstJson(path, *again);
    }
  }
}

// A query over every type DuckDB exports to Arrow, with nulls, sliced offsets and nesting.
constexpr const char* kAllTypesSql = R"sql(
SELECT
  (i % 2 = 0)::BOOLEAN AS b,
  (i % 200 - 100)::TINYINT AS i8, (i % 30 * 1000)::SMALLINT AS i16, (i * 100000)::INTEGER AS i32,
  (i * 10000000000)::BIGINT AS i64,
  (i % 256)::UTINYINT AS u8, (i % 60 * 1000)::USMALLINT AS u16, (i * 100000)::UINTEGER AS u32,
  (i * 10000000000)::UBIGINT AS u64,
  (i / 4)::FLOAT AS f32, (i / 3)::DOUBLE AS f64,
  (i % 70 * 1.25)::DECIMAL(4, 2) AS d4, (i * 12345.678)::DECIMAL(18, 3) AS d18,
  (i * 12345678901234.5678)::DECIMAL(38, 4) AS d38,
  CASE WHEN i % 3 = 0 THEN NULL ELSE 'str-' || i END AS s,
  ('blob' || i)::BLOB AS bl,
  (DATE '2024-01-01' + i::INTEGER) AS dt,
  (TIME '12:34:56.789' + INTERVAL (i) SECOND) AS tm,
  (TIMESTAMP '2024-05-06 07:08:09.123456' + INTERVAL (i) HOUR) AS ts,
  (TIMESTAMPTZ '2024-05-06 07:08:09.123456+00' + INTERVAL (i) MINUTE) AS tstz,
  INTERVAL (i) DAY + INTERVAL 3 MONTH + INTERVAL 5 MICROSECOND AS iv,
  CASE WHEN i % 4 = 1 THEN NULL ELSE [i, i + 1, NULL] END AS li,
  [i::VARCHAR, 'x'] AS ls,
  [i, i * 2]::INTEGER[2] AS arr,
  {'a': i, 'b': 'n' || i, 'c': [i]} AS st,
  MAP {'k' || i: i, 'z': NULL} AS mp,
  ('e' || (i % 3))::ENUM_T AS en,
  (i::HUGEINT * 17014118346046923173168730371588410) AS hi,
  NULL AS nu
FROM range(0, 5000) t(i)
)sql";

TEST(StreamEncoderTest, EncodesEveryDuckDbTypeAndDecodesItBack) {
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_TRUE((*db)->Execute("CREATE TYPE ENUM_T AS ENUM ('e0', 'e1', 'e2')").ok());
  struct Setting {
    const char* sql;
    Compression compression;
  };
  // DuckDB's Arrow output options: default, 64-bit offsets (U/Z/+L), string views (vu).
  for (Setting setting : {Setting{"SET GLOBAL arrow_large_buffer_size = false", Compression::kNone},
                          Setting{"SET GLOBAL arrow_large_buffer_size = true", Compression::kLz4Frame},
                          Setting{"SET GLOBAL produce_arrow_string_view = true", Compression::kZstd}}) {
    SCOPED_TRACE(setting.sql);
    ASSERT_TRUE((*db)->Execute(setting.sql).ok());
    Compression c = setting.compression;
    // Render DuckDB's own arrays, then encode a second run and compare the decoded result.
    auto stream = (*db)->QueryArrow(kAllTypesSql);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    Decoded original;
    ASSERT_EQ((*stream)->get_schema(stream->get(), original.schema.get()), 0);
    while (true) {
      ArrayHandle batch;
      ASSERT_EQ((*stream)->get_next(stream->get(), batch.get()), 0);
      if (!batch.valid()) break;
      original.batches.push_back(std::move(batch));
    }
    Json want = Render(original);
    auto stream2 = (*db)->QueryArrow(kAllTypesSql);
    ASSERT_TRUE(stream2.ok());
    Result<std::string> bytes = EncodeStream(stream2->get(), {c});
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    Result<Decoded> d = DecodeAll(*bytes);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(want.size(), d->batches.size());
    for (int64_t i = 0; i < original.schema->n_children; ++i) {
      std::string want_format = original.schema->children[i]->format;
      if (want_format.starts_with("d:") && want_format.ends_with(",128")) {
        want_format.resize(want_format.size() - 4);  // "d:P,S,128" is the default width: "d:P,S"
      }
      EXPECT_EQ(want_format, d->schema->children[i]->format);
      EXPECT_STREQ(original.schema->children[i]->name, d->schema->children[i]->name);
    }
    // The formats DuckDB exported under this setting, for the test log.
    std::string formats;
    for (int64_t i = 0; i < original.schema->n_children; ++i) {
      const ArrowSchema& f = *original.schema->children[i];
      formats += std::string(" ") + f.name + "=" + f.format;
      for (int64_t k = 0; k < f.n_children; ++k) formats += std::string("<") + f.children[k]->format + ">";
    }
    RecordProperty(setting.sql, formats);
    Json got = Render(*d);
    for (size_t b = 0; b < want.size(); ++b) {
      for (size_t col = 0; col < want[b].size(); ++col) {
        ExpectColumnEq(want[b][col], got[b][col], "batch " + std::to_string(b) + " column " + std::to_string(col));
      }
    }
  }
}

TEST(StreamEncoderTest, SlicedArraysEncodeOnlyTheirElements) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Result<Decoded> d = DecodeAll(ReadFile(kFixtures + "/1.0.0-littleendian/generated_nested.stream"));
  ASSERT_TRUE(d.ok());
  // Slice every batch by moving its offset: 3 elements from element 1 (a non-byte-aligned bit
  // offset, non-zero first list offsets).
  Decoded sliced;
  sliced.schema = std::move(d->schema);
  for (ArrayHandle& b : d->batches) {
    if (b->length < 4) continue;
    b->offset = 1;
    b->length = 3;
    sliced.batches.push_back(std::move(b));
  }
  ASSERT_FALSE(sliced.batches.empty());
  Json want = Render(sliced);
  Result<std::string> bytes = Encode(std::move(sliced), {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<Decoded> again = DecodeAll(*bytes);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Json got = Render(*again);
  ASSERT_EQ(want.size(), got.size());
  for (size_t b = 0; b < want.size(); ++b) {
    for (size_t c = 0; c < want[b].size(); ++c) ExpectColumnEq(want[b][c], got[b][c], "sliced");
  }
}

TEST(StreamEncoderTest, ZeroCopySlicesPointIntoTheBatch) {
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  auto stream = (*db)->QueryArrow("SELECT i::BIGINT AS x FROM range(0, 1000) t(i)");
  ASSERT_TRUE(stream.ok());
  SchemaHandle schema;
  ASSERT_EQ((*stream)->get_schema(stream->get(), schema.get()), 0);
  ArrayHandle batch;
  ASSERT_EQ((*stream)->get_next(stream->get(), batch.get()), 0);
  const void* values = batch->children[0]->buffers[1];
  auto encoder = StreamEncoder::Make(*schema.get());
  ASSERT_TRUE(encoder.ok());
  auto messages = (*encoder)->EncodeBatch(std::move(batch));
  ASSERT_TRUE(messages.ok());
  ASSERT_EQ(messages->size(), 1u);
  const EncodedMessage& m = messages->front();
  bool found = false;
  for (const BodySlice& s : m.body) found = found || s.data == values;
  EXPECT_TRUE(found);
  int64_t total = 0;
  for (const BodySlice& s : m.body) total += s.size;
  EXPECT_EQ(total, m.body_length);
  EXPECT_EQ(m.metadata.size() % 8, 0u);
  EXPECT_EQ(m.ToString().size(), m.metadata.size() + m.body_length);
}

// ------------------------------------------------------------------ malformed input

std::string SmallStream() {
  return ReadFile(kFixtures + "/1.0.0-littleendian/generated_nested.stream");
}

Status DecodeStatus(std::string bytes) { return DecodeAll(std::move(bytes)).status(); }

TEST(StreamReaderTest, TruncatedStreamsAreCorruptAtEveryOffset) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::string full = SmallStream();
  ASSERT_TRUE(DecodeStatus(full).ok());
  // Every cut that is not at a message boundary must fail; cuts at a boundary are a valid
  // (shorter) stream, which the reader accepts as ended.
  int corrupt = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    Status s = DecodeStatus(full.substr(0, n));
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kCorruption) << n << ": " << s.ToString();
      ++corrupt;
    }
  }
  EXPECT_GT(corrupt, static_cast<int>(full.size()) - 10);
}

TEST(StreamReaderTest, GarbledMetadataIsCorrupt) {
  std::string full = SmallStream();
  // Flip bytes inside the first record batch's flatbuffer one at a time; none may crash and
  // failures must be kCorruption (some flips land in padding or values and stay valid).
  for (size_t i = 8; i < 200 && i < full.size(); ++i) {
    std::string bad = full;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    Status s = DecodeStatus(bad);
    if (!s.ok()) {
      EXPECT_TRUE(s.code() == StatusCode::kCorruption || s.code() == StatusCode::kNotImplemented)
          << i << ": " << s.ToString();
    }
  }
  std::string garbage = full;
  for (size_t i = 8; i < 64; ++i) garbage[i] = static_cast<char>(0xAB);
  EXPECT_EQ(DecodeStatus(garbage).code(), StatusCode::kCorruption);
}

TEST(StreamReaderTest, BufferPastTheBodyIsCorrupt) {
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  auto stream = (*db)->QueryArrow("SELECT i::BIGINT AS x, 'v' || i AS s FROM range(0, 10) t(i)");
  ASSERT_TRUE(stream.ok());
  Result<std::string> bytes = EncodeStream(stream->get());
  ASSERT_TRUE(bytes.ok());
  // Locate the record batch message and enlarge its declared body length past the stream end
  // by patching its last buffer's length (an int64 equal to the values buffer size).
  std::string good = *bytes;
  ASSERT_TRUE(DecodeStatus(good).ok());
  int patched = 0;
  for (size_t i = 0; i + 8 <= good.size(); i += 8) {
    int64_t v;
    std::memcpy(&v, good.data() + i, 8);
    if (v == 80) {  // the 10 x int64 values buffer length (first occurrence is in the metadata)
      std::string bad = good;
      int64_t huge = int64_t{1} << 40;
      std::memcpy(bad.data() + i, &huge, 8);
      Status s = DecodeStatus(bad);
      EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
      ++patched;
      break;
    }
  }
  EXPECT_EQ(patched, 1);
}

TEST(StreamReaderTest, BadContinuationMarkerIsCorrupt) {
  std::string bad = SmallStream();
  bad[0] = '\x12';
  bad[1] = '\x34';
  EXPECT_EQ(DecodeStatus(bad).code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeStatus("").code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeStatus(std::string(EndOfStreamMarker())).code(), StatusCode::kCorruption);
}

TEST(MessageDecoderTest, RejectsRecordBatchBeforeSchema) {
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  auto stream = (*db)->QueryArrow("SELECT 1 AS x");
  ASSERT_TRUE(stream.ok());
  SchemaHandle schema;
  ASSERT_EQ((*stream)->get_schema(stream->get(), schema.get()), 0);
  ArrayHandle batch;
  ASSERT_EQ((*stream)->get_next(stream->get(), batch.get()), 0);
  auto encoder = StreamEncoder::Make(*schema.get());
  ASSERT_TRUE(encoder.ok());
  auto messages = (*encoder)->EncodeBatch(std::move(batch));
  ASSERT_TRUE(messages.ok());
  std::string body = messages->back().ToString().substr(messages->back().metadata.size());
  MessageDecoder decoder;
  EXPECT_EQ(decoder.Decode(messages->back().flatbuffer(), body).status().code(), StatusCode::kCorruption);
  EncodedMessage sm = (*encoder)->SchemaMessage();
  ASSERT_TRUE(decoder.Decode(sm.flatbuffer(), "").ok());
  auto decoded = decoder.Decode(messages->back().flatbuffer(), body);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(decoded->has_value());
  EXPECT_EQ((**decoded)->length, 1);
}

}  // namespace
}  // namespace skade::arrow::ipc

namespace skade::arrow::ipc {
namespace {

// apache-arrow (npm) reads what the encoder writes from DuckDB's Arrow output, exactly.
TEST(StreamEncoderTest, ApacheArrowJsReadsEncodedDuckDbTypes) {
  testing::ProcessResult node = testing::RunProcess("node --version");
  ASSERT_EQ(node.exit_code, 0) << "node is required (scripts/setup.sh installs it)";
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Execute("CREATE TYPE ENUM_T AS ENUM ('e0', 'e1', 'e2')").ok());
  auto stream = (*db)->QueryArrow(R"sql(
    SELECT * FROM (VALUES
      (true, -7::TINYINT, 300::SMALLINT, -70000::INTEGER, 9007199254740993::BIGINT,
       250::UTINYINT, 65000::USMALLINT, 4000000000::UINTEGER, 18446744073709551615::UBIGINT,
       1.5::FLOAT, -2.25::DOUBLE, 12.34::DECIMAL(4, 2), 123456789012.345::DECIMAL(18, 3),
       'héllo', '\x01\xFF'::BLOB, DATE '2024-02-29', TIMESTAMP '2024-05-06 07:08:09.123456',
       TIMESTAMPTZ '2024-05-06 07:08:09.5+00', [1, NULL, 3], {'a': 1, 'b': 'x'},
       MAP {'k': 2}, 'e2'::ENUM_T, [4, 5]::INTEGER[2]),
      (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
    ) t(b, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, d4, d18, s, bl, dt, ts, tstz, li,
        st, mp, en, arr))sql");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  Result<std::string> bytes = EncodeStream(stream->get());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  testing::TempDir dir;
  std::string path = dir.Path("all.arrows");
  {
    std::ofstream out(path, std::ios::binary);
    out << *bytes;
  }
  testing::ProcessResult r = testing::RunProcess(
      "node " + testing::ShellQuote(skade::testing::SourcePath("tests/interop/arrow_read.mjs")) + " " +
      testing::ShellQuote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json got = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(got.is_discarded()) << r.out;
  ASSERT_EQ(got["rows"].size(), 2u) << r.out;
  const Json& row = got["rows"][0];
  EXPECT_EQ(row["b"], true);
  EXPECT_EQ(row["i8"], -7);
  EXPECT_EQ(row["i16"], 300);
  EXPECT_EQ(row["i32"], -70000);
  EXPECT_EQ(row["i64"], "9007199254740993");
  EXPECT_EQ(row["u8"], 250);
  EXPECT_EQ(row["u16"], 65000);
  EXPECT_EQ(row["u32"], 4000000000u);
  EXPECT_EQ(row["u64"], "18446744073709551615");
  EXPECT_EQ(row["f32"], 1.5);
  EXPECT_EQ(row["f64"], -2.25);
  EXPECT_EQ(row["s"], "héllo");
  EXPECT_EQ(row["bl"], Json::array({1, 255}));
  EXPECT_EQ(row["dt"], 1709164800000LL);
  EXPECT_EQ(row["li"], Json::array({1, nullptr, 3}));
  EXPECT_EQ(row["st"], Json({{"a", 1}, {"b", "x"}}));
  EXPECT_EQ(row["en"], "e2");
  EXPECT_EQ(row["arr"], Json::array({4, 5}));
  for (const auto& [name, value] : got["rows"][1].items()) EXPECT_TRUE(value.is_null()) << name;
  // Decimals come back as their unscaled 128-bit value in 32-bit words, low first.
  EXPECT_EQ(row["d4"], Json::array({1234, 0, 0, 0}));
  EXPECT_EQ(row["d18"], Json::array({2249056121u, 28744, 0, 0}));  // 123456789012345
  EXPECT_EQ(row["ts"], 1714979289123.456);
  EXPECT_EQ(row["tstz"], 1714979289500LL);
  EXPECT_EQ(row["mp"], Json({{"k", 2}}));
  EXPECT_EQ(got["schema"][17]["type"], "Timestamp<MICROSECOND, UTC>");
  EXPECT_EQ(got["schema"][21]["type"], "Dictionary<Uint8, Utf8>");
}

}  // namespace
}  // namespace skade::arrow::ipc

// ------------------------------------------------------------------ hostile messages
// Messages built field by field (tests/arrow/ipc_message_builder.h): every optional flatbuffer
// field left out, every length, offset and index pushed out of range. None may crash or read
// out of bounds (this suite also runs under ASan+UBSan); each must be an error status, or
// decode when the input is valid after all.

namespace skade::arrow::ipc {
namespace {

using test_messages::Body;
using test_messages::BufferSpec;
using test_messages::HeaderCode;
using test_messages::MessageBuilder;
using test_messages::NodeSpec;
using test_messages::Placement;
using test_messages::TypeCode;
using Ref = MessageBuilder::Ref;
using Fields = std::optional<std::vector<Ref>>;

struct Message {
  std::string flatbuffer;
  std::string body;
};

// A Schema message whose fields `make(builder)` writes.
template <typename MakeFields>
Message SchemaMessage(MakeFields make) {
  MessageBuilder b;
  Fields fields = make(b);
  return {b.Finish(HeaderCode::kSchema, b.Schema(fields), 0), ""};
}

// A RecordBatch message over `body`.
Message BatchMessage(int64_t length, std::vector<NodeSpec> nodes, const Body& body,
                     Placement placement = Placement::kAligned,
                     std::optional<std::vector<int64_t>> variadic_counts = {}) {
  MessageBuilder b;
  Ref batch = b.RecordBatch(length, nodes, body.buffers, 0, variadic_counts, placement);
  return {b.Finish(HeaderCode::kRecordBatch, batch, static_cast<int64_t>(body.bytes.size())),
          body.bytes};
}

// A one-column RecordBatch message of length 1 whose body uses compression `codec`
// (CompressionType: 0 LZ4_FRAME, 1 ZSTD).
Message CompressedBatch(int8_t codec, const Body& body) {
  MessageBuilder b;
  Ref batch = b.RecordBatch(1, std::vector<NodeSpec>{{1, 0}}, body.buffers, b.Compression(codec));
  return {b.Finish(HeaderCode::kRecordBatch, batch, static_cast<int64_t>(body.bytes.size())),
          body.bytes};
}

Message DictionaryMessage(int64_t id, int64_t length, std::vector<NodeSpec> nodes, const Body& body,
                          bool is_delta) {
  MessageBuilder b;
  Ref data = b.RecordBatch(length, nodes, body.buffers);
  Ref dict = b.DictionaryBatch(id, data, is_delta);
  return {b.Finish(HeaderCode::kDictionaryBatch, dict, static_cast<int64_t>(body.bytes.size())),
          body.bytes};
}

// Decodes `messages` in order with one decoder, exporting (and releasing) every batch; the
// first failure, else Ok. `batches` counts the record batches.
Status DecodeMessages(const std::vector<Message>& messages, int* batches = nullptr) {
  MessageDecoder decoder;
  for (const Message& m : messages) {
    SKADE_ASSIGN_OR_RETURN(std::optional<ArrayHandle> batch, decoder.Decode(m.flatbuffer, m.body));
    if (batch.has_value() && batches != nullptr) ++*batches;
  }
  if (decoder.has_schema()) return decoder.ExportSchema().status();
  return Status::Ok();
}

Fields Int32Column(MessageBuilder& b) {
  return std::vector<Ref>{b.Field(TypeCode::kInt, b.Int(32, true))};
}

Fields Utf8Column(MessageBuilder& b) {
  return std::vector<Ref>{b.Field(TypeCode::kUtf8, b.Empty())};
}

Fields ListOfInt32Column(MessageBuilder& b) {
  Ref item = b.Field(TypeCode::kInt, b.Int(32, true), std::vector<Ref>{}, 0, "item");
  return std::vector<Ref>{b.Field(TypeCode::kList, b.Empty(), std::vector<Ref>{item})};
}

std::string Int32s(std::vector<int32_t> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::string Int64s(std::vector<int64_t> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
}

TEST(MessageDecoderTest, DecodesHandBuiltMessages) {
  // The builder itself writes valid messages: the cases below differ from these by one field.
  int batches = 0;
  Body ints;
  ints.AddEmpty().Add(Int32s({1, 2, 3}));
  ASSERT_TRUE(
      DecodeMessages({SchemaMessage(Int32Column), BatchMessage(3, {{3, 0}}, ints)}, &batches).ok());
  Body strings;
  strings.AddEmpty().Add(Int32s({0, 1, 3})).Add("abc");
  ASSERT_TRUE(
      DecodeMessages({SchemaMessage(Utf8Column), BatchMessage(2, {{2, 0}}, strings)}, &batches)
          .ok());
  Body lists;
  lists.AddEmpty().Add(Int32s({0, 1, 3})).AddEmpty().Add(Int32s({7, 8, 9}));
  ASSERT_TRUE(
      DecodeMessages({SchemaMessage(ListOfInt32Column), BatchMessage(2, {{2, 0}, {3, 0}}, lists)},
                     &batches)
          .ok());
  EXPECT_EQ(batches, 3);
}

struct HostileSchema {
  const char* name;
  Fields (*make)(MessageBuilder&);
  StatusCode code;
};

const HostileSchema kHostileSchemas[] = {
    {"FieldWithoutType",
     [](MessageBuilder& b) -> Fields { return std::vector<Ref>{b.Field(TypeCode::kNone, 0)}; },
     StatusCode::kCorruption},
    {"IntTypeCodeWithoutTable",
     [](MessageBuilder& b) -> Fields { return std::vector<Ref>{b.Field(TypeCode::kInt, 0)}; },
     StatusCode::kCorruption},
    {"FloatTypeCodeWithoutTable",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kFloatingPoint, 0)};
     },
     StatusCode::kCorruption},
    {"TimestampTypeCodeWithoutTable",
     [](MessageBuilder& b) -> Fields { return std::vector<Ref>{b.Field(TypeCode::kTimestamp, 0)}; },
     StatusCode::kCorruption},
    {"UnknownTypeCode",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(static_cast<TypeCode>(200), b.Empty())};
     },
     StatusCode::kNotImplemented},
    {"IntOfOddWidth",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kInt, b.Int(12, true))};
     },
     StatusCode::kCorruption},
    {"ListWithoutChildren",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kList, b.Empty(), std::nullopt)};
     },
     StatusCode::kCorruption},
    {"ListWithTwoChildren",
     [](MessageBuilder& b) -> Fields {
       Ref c1 = b.Field(TypeCode::kInt, b.Int(8, true));
       Ref c2 = b.Field(TypeCode::kInt, b.Int(8, true));
       return std::vector<Ref>{b.Field(TypeCode::kList, b.Empty(), std::vector<Ref>{c1, c2})};
     },
     StatusCode::kCorruption},
    {"FixedSizeListWithoutChild",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kFixedSizeList, b.FixedSizeList(2))};
     },
     StatusCode::kCorruption},
    {"FixedSizeListOfNegativeSize",
     [](MessageBuilder& b) -> Fields {
       Ref c = b.Field(TypeCode::kInt, b.Int(8, true));
       return std::vector<Ref>{
           b.Field(TypeCode::kFixedSizeList, b.FixedSizeList(-1), std::vector<Ref>{c})};
     },
     StatusCode::kCorruption},
    {"FixedSizeListWithoutTable",
     [](MessageBuilder& b) -> Fields {
       Ref c = b.Field(TypeCode::kInt, b.Int(8, true));
       return std::vector<Ref>{b.Field(TypeCode::kFixedSizeList, 0, std::vector<Ref>{c})};
     },
     StatusCode::kCorruption},
    {"FixedSizeBinaryOfNegativeWidth",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kFixedSizeBinary, b.FixedSizeBinary(-8))};
     },
     StatusCode::kCorruption},
    {"MapOfNonStruct",
     [](MessageBuilder& b) -> Fields {
       Ref c = b.Field(TypeCode::kInt, b.Int(8, true));
       return std::vector<Ref>{b.Field(TypeCode::kMap, b.Empty(), std::vector<Ref>{c})};
     },
     StatusCode::kCorruption},
    {"MapEntriesOfOneField",
     [](MessageBuilder& b) -> Fields {
       Ref key = b.Field(TypeCode::kInt, b.Int(8, true));
       Ref entries = b.Field(TypeCode::kStruct, b.Empty(), std::vector<Ref>{key});
       return std::vector<Ref>{b.Field(TypeCode::kMap, b.Empty(), std::vector<Ref>{entries})};
     },
     StatusCode::kCorruption},
    {"UnionWithoutTypeIds",
     [](MessageBuilder& b) -> Fields {
       Ref c = b.Field(TypeCode::kInt, b.Int(8, true));
       return std::vector<Ref>{
           b.Field(TypeCode::kUnion, b.Union(1, std::nullopt), std::vector<Ref>{c})};
     },
     StatusCode::kNotImplemented},
    {"DictionaryWithoutIndexType",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{
           b.Field(TypeCode::kUtf8, b.Empty(), std::vector<Ref>{}, b.DictionaryEncoding(1, 0))};
     },
     StatusCode::kCorruption},
    {"DictionaryWithFloatWidthIndex",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kUtf8, b.Empty(), std::vector<Ref>{},
                                       b.DictionaryEncoding(1, b.Int(3, false)))};
     },
     StatusCode::kCorruption},
    {"DecimalOfZeroPrecision",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kDecimal, b.Decimal(0, 0, 128))};
     },
     StatusCode::kCorruption},
    {"DecimalOfNegativePrecision",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kDecimal, b.Decimal(-3, 0, 128))};
     },
     StatusCode::kCorruption},
    {"Decimal128OfPrecision39",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kDecimal, b.Decimal(39, 2, 128))};
     },
     StatusCode::kCorruption},
    {"Decimal32OfPrecision10",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kDecimal, b.Decimal(10, 2, 32))};
     },
     StatusCode::kCorruption},
    {"DictionaryIdsSharedByDifferentTypes",
     [](MessageBuilder& b) -> Fields {
       Ref a = b.Field(TypeCode::kUtf8, b.Empty(), std::vector<Ref>{},
                       b.DictionaryEncoding(0, b.Int(32, true)), "a");
       Ref c = b.Field(TypeCode::kInt, b.Int(64, true), std::vector<Ref>{},
                       b.DictionaryEncoding(0, b.Int(32, true)), "c");
       return std::vector<Ref>{a, c};
     },
     StatusCode::kCorruption},
    {"DictionaryIdReusedInsideItsOwnValues",
     [](MessageBuilder& b) -> Fields {
       Ref item = b.Field(TypeCode::kInt, b.Int(8, true), std::vector<Ref>{},
                          b.DictionaryEncoding(5, b.Int(8, true)));
       return std::vector<Ref>{b.Field(TypeCode::kList, b.Empty(), std::vector<Ref>{item},
                                       b.DictionaryEncoding(5, b.Int(8, true)))};
     },
     StatusCode::kCorruption},
    {"NestedFiftyDeep",
     [](MessageBuilder& b) -> Fields {
       Ref f = b.Field(TypeCode::kInt, b.Int(8, true));
       for (int i = 0; i < 50; ++i) f = b.Field(TypeCode::kList, b.Empty(), std::vector<Ref>{f});
       return std::vector<Ref>{f};
     },
     StatusCode::kCorruption},
};

TEST(MessageDecoderTest, RejectsHostileSchemas) {
  for (const HostileSchema& c : kHostileSchemas) {
    Status s = DecodeMessages({SchemaMessage(c.make)});
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s.ToString();
  }
}

TEST(MessageDecoderTest, AcceptsSchemasWithoutFieldsAndSharedDictionaries) {
  EXPECT_TRUE(
      DecodeMessages({SchemaMessage([](MessageBuilder&) -> Fields { return std::nullopt; })}).ok());
  // Spec: fields may share one dictionary when their value types agree.
  Status s = DecodeMessages({SchemaMessage([](MessageBuilder& b) -> Fields {
    Ref a = b.Field(TypeCode::kUtf8, b.Empty(), std::vector<Ref>{},
                    b.DictionaryEncoding(0, b.Int(32, true)), "a");
    Ref c = b.Field(TypeCode::kUtf8, b.Empty(), std::vector<Ref>{},
                    b.DictionaryEncoding(0, b.Int(8, true)), "c");
    return std::vector<Ref>{a, c};
  })});
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(MessageDecoderTest, HeaderTypeWithoutHeaderIsCorrupt) {
  for (HeaderCode code :
       {HeaderCode::kSchema, HeaderCode::kDictionaryBatch, HeaderCode::kRecordBatch}) {
    MessageBuilder b;
    Message m{b.Finish(code, 0, 0), ""};
    EXPECT_EQ(DecodeMessages({m}).code(), StatusCode::kCorruption) << static_cast<int>(code);
  }
}

struct HostileBatch {
  const char* name;
  Fields (*schema)(MessageBuilder&);
  std::vector<Message> (*messages)();
};

const HostileBatch kHostileBatches[] = {
    {"NodesLeftOut", Int32Column,
     [] {
       MessageBuilder b;
       Ref batch = b.RecordBatch(0, std::nullopt, std::vector<BufferSpec>{});
       return std::vector<Message>{{b.Finish(HeaderCode::kRecordBatch, batch, 0), ""}};
     }},
    {"BuffersLeftOut", Int32Column,
     [] {
       MessageBuilder b;
       Ref batch = b.RecordBatch(0, std::vector<NodeSpec>{{0, 0}}, std::nullopt);
       return std::vector<Message>{{b.Finish(HeaderCode::kRecordBatch, batch, 0), ""}};
     }},
    {"TooFewNodes", Int32Column, [] { return std::vector<Message>{BatchMessage(0, {}, Body())}; }},
    {"TooFewBuffers", Int32Column,
     [] {
       return std::vector<Message>{BatchMessage(1, {{1, 0}}, Body().AddEmpty())};
     }},
    {"NegativeNodeLength", Int32Column,
     [] {
       return std::vector<Message>{BatchMessage(0, {{-1, 0}}, Body().AddEmpty().AddEmpty())};
     }},
    {"HugeNodeLength", Int32Column,
     [] {
       return std::vector<Message>{
           BatchMessage(0, {{int64_t{1} << 62, 0}}, Body().AddEmpty().AddEmpty())};
     }},
    {"NullCountAboveLength", Int32Column,
     [] {
       return std::vector<Message>{BatchMessage(1, {{1, 2}}, Body().Add("\x01").Add(Int32s({1})))};
     }},
    {"NegativeNullCount", Int32Column,
     [] {
       return std::vector<Message>{BatchMessage(1, {{1, -1}}, Body().AddEmpty().Add(Int32s({1})))};
     }},
    {"NegativeBatchLength", Int32Column,
     [] {
       return std::vector<Message>{BatchMessage(-1, {{1, 0}}, Body().AddEmpty().Add(Int32s({1})))};
     }},
    {"BatchLongerThanItsColumn", Int32Column,
     [] {
       return std::vector<Message>{BatchMessage(5, {{1, 0}}, Body().AddEmpty().Add(Int32s({1})))};
     }},
    {"ValuesBufferTooShort", Int32Column,
     [] {
       return std::vector<Message>{
           BatchMessage(3, {{3, 0}}, Body().AddEmpty().Add(Int32s({1, 2})))};
     }},
    {"ValidityBufferMissingForNulls", Int32Column,
     [] {
       return std::vector<Message>{
           BatchMessage(3, {{3, 1}}, Body().AddEmpty().Add(Int32s({1, 2, 3})))};
     }},
    {"BufferPastTheBody", Int32Column,
     [] {
       Body body = Body().AddEmpty().Add(Int32s({1, 2, 3}));
       body.buffers[1].offset = 64;
       return std::vector<Message>{BatchMessage(3, {{3, 0}}, body)};
     }},
    {"BufferOffsetPlusLengthOverflows", Int32Column,
     [] {
       Body body = Body().AddEmpty().Add(Int32s({1, 2, 3}));
       body.buffers[1] = {8, std::numeric_limits<int64_t>::max()};
       return std::vector<Message>{BatchMessage(3, {{3, 0}}, body)};
     }},
    {"NegativeBufferOffset", Int32Column,
     [] {
       Body body = Body().AddEmpty().Add(Int32s({1, 2, 3}));
       body.buffers[1].offset = -8;
       return std::vector<Message>{BatchMessage(3, {{3, 0}}, body)};
     }},
    {"NegativeBufferLength", Int32Column,
     [] {
       Body body = Body().AddEmpty().Add(Int32s({1, 2, 3}));
       body.buffers[1].length = -12;
       return std::vector<Message>{BatchMessage(3, {{3, 0}}, body)};
     }},
    {"BodyLengthPastTheBody", Int32Column,
     [] {
       Message m = BatchMessage(3, {{3, 0}}, Body().AddEmpty().Add(Int32s({1, 2, 3})));
       m.body.resize(8);
       return std::vector<Message>{m};
     }},
    {"StringOffsetsDecreasing", Utf8Column,
     [] {
       return std::vector<Message>{
           BatchMessage(2, {{2, 0}}, Body().AddEmpty().Add(Int32s({0, 3, 1})).Add("abc"))};
     }},
    {"StringOffsetsPastTheData", Utf8Column,
     [] {
       return std::vector<Message>{
           BatchMessage(2, {{2, 0}}, Body().AddEmpty().Add(Int32s({0, 1, 9})).Add("abc"))};
     }},
    {"StringOffsetsNegative", Utf8Column,
     [] {
       return std::vector<Message>{
           BatchMessage(2, {{2, 0}}, Body().AddEmpty().Add(Int32s({-4, 1, 2})).Add("abc"))};
     }},
    {"StringOffsetsTooShort", Utf8Column,
     [] {
       return std::vector<Message>{
           BatchMessage(2, {{2, 0}}, Body().AddEmpty().Add(Int32s({0, 1})).Add("abc"))};
     }},
    {"ListOffsetsPastTheChild", ListOfInt32Column,
     [] {
       Body body = Body().AddEmpty().Add(Int32s({0, 1, 5})).AddEmpty().Add(Int32s({7, 8, 9}));
       return std::vector<Message>{BatchMessage(2, {{2, 0}, {3, 0}}, body)};
     }},
    {"ListOffsetsDecreasing", ListOfInt32Column,
     [] {
       Body body = Body().AddEmpty().Add(Int32s({0, 2, 1})).AddEmpty().Add(Int32s({7, 8, 9}));
       return std::vector<Message>{BatchMessage(2, {{2, 0}, {3, 0}}, body)};
     }},
    {"StructChildShorterThanTheStruct",
     [](MessageBuilder& b) -> Fields {
       Ref c = b.Field(TypeCode::kInt, b.Int(32, true));
       return std::vector<Ref>{b.Field(TypeCode::kStruct, b.Empty(), std::vector<Ref>{c})};
     },
     [] {
       Body body = Body().AddEmpty().AddEmpty().Add(Int32s({1}));
       return std::vector<Message>{BatchMessage(3, {{3, 0}, {1, 0}}, body)};
     }},
    {"FixedSizeListChildTooShort",
     [](MessageBuilder& b) -> Fields {
       Ref c = b.Field(TypeCode::kInt, b.Int(32, true));
       return std::vector<Ref>{
           b.Field(TypeCode::kFixedSizeList, b.FixedSizeList(2), std::vector<Ref>{c})};
     },
     [] {
       Body body = Body().AddEmpty().AddEmpty().Add(Int32s({1, 2, 3}));
       return std::vector<Message>{BatchMessage(2, {{2, 0}, {3, 0}}, body)};
     }},
    {"MapWithNullEntries",
     [](MessageBuilder& b) -> Fields {
       Ref key = b.Field(TypeCode::kInt, b.Int(8, true), std::vector<Ref>{}, 0, "key");
       Ref value = b.Field(TypeCode::kInt, b.Int(8, true), std::vector<Ref>{}, 0, "value");
       Ref entries =
           b.Field(TypeCode::kStruct, b.Empty(), std::vector<Ref>{key, value}, 0, "entries");
       return std::vector<Ref>{b.Field(TypeCode::kMap, b.Empty(), std::vector<Ref>{entries})};
     },
     [] {
       Body body = Body()
                       .AddEmpty()
                       .Add(Int32s({0, 1}))
                       .Add("\x00")
                       .Add("\x01")
                       .Add("\x01")
                       .Add("\x01")
                       .Add("\x01");
       return std::vector<Message>{BatchMessage(1, {{1, 0}, {1, 1}, {1, 0}, {1, 0}}, body)};
     }},
    {"ViewOutsideItsDataBuffer",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kUtf8View, b.Empty())};
     },
     [] {
       std::string view(16, '\0');
       int32_t size = 20, index = 0, offset = 0;
       std::memcpy(view.data(), &size, 4);
       std::memcpy(view.data() + 8, &index, 4);
       std::memcpy(view.data() + 12, &offset, 4);
       Body body = Body().AddEmpty().Add(view).Add("abcd");
       return std::vector<Message>{
           BatchMessage(1, {{1, 0}}, body, Placement::kAligned, std::vector<int64_t>{1})};
     }},
    {"ViewIntoAMissingDataBuffer",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kUtf8View, b.Empty())};
     },
     [] {
       std::string view(16, '\0');
       int32_t size = 20, index = 3, offset = 0;
       std::memcpy(view.data(), &size, 4);
       std::memcpy(view.data() + 8, &index, 4);
       std::memcpy(view.data() + 12, &offset, 4);
       Body body = Body().AddEmpty().Add(view).Add(std::string(32, 'x'));
       return std::vector<Message>{
           BatchMessage(1, {{1, 0}}, body, Placement::kAligned, std::vector<int64_t>{1})};
     }},
    {"ViewsWithoutVariadicCounts",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kUtf8View, b.Empty())};
     },
     [] {
       return std::vector<Message>{
           BatchMessage(1, {{1, 0}}, Body().AddEmpty().Add(std::string(16, '\0')))};
     }},
    {"NegativeVariadicCount",
     [](MessageBuilder& b) -> Fields {
       return std::vector<Ref>{b.Field(TypeCode::kUtf8View, b.Empty())};
     },
     [] {
       Body body = Body().AddEmpty().Add(std::string(16, '\0'));
       return std::vector<Message>{
           BatchMessage(1, {{1, 0}}, body, Placement::kAligned, std::vector<int64_t>{-1})};
     }},
    {"UnknownCompressionCodec", Int32Column,
     [] { return std::vector<Message>{CompressedBatch(9, Body().AddEmpty().Add(Int32s({1})))}; }},
    {"CompressedBufferClaimsAHugeSize", Int32Column,
     [] {
       return std::vector<Message>{
           CompressedBatch(1, Body().AddEmpty().Add(Int64s({int64_t{1} << 40, 0})))};
     }},
    {"CompressedBufferOfGarbage", Int32Column,
     [] {
       return std::vector<Message>{
           CompressedBatch(0, Body().AddEmpty().Add(Int64s({4, 0x1234567890})))};
     }},
    {"CompressedBufferShorterThanItsPrefix", Int32Column,
     [] { return std::vector<Message>{CompressedBatch(1, Body().AddEmpty().Add("abc"))}; }},
};

// Dictionary-encoded utf8 values with int8 indices under dictionary id 7.
Fields DictionaryColumn(MessageBuilder& b) {
  return std::vector<Ref>{b.Field(TypeCode::kUtf8, b.Empty(), std::vector<Ref>{},
                                  b.DictionaryEncoding(7, b.Int(8, true)))};
}

Message TwoWordDictionary(int64_t id) {
  return DictionaryMessage(id, 2, {{2, 0}}, Body().AddEmpty().Add(Int32s({0, 1, 3})).Add("abc"),
                           false);
}

const HostileBatch kHostileDictionaries[] = {
    {"IndexPastTheDictionary", DictionaryColumn,
     [] {
       return std::vector<Message>{
           TwoWordDictionary(7),
           BatchMessage(3, {{3, 0}}, Body().AddEmpty().Add(std::string("\x00\x01\x02", 3)))};
     }},
    {"NegativeIndex", DictionaryColumn,
     [] {
       return std::vector<Message>{TwoWordDictionary(7),
                                   BatchMessage(1, {{1, 0}}, Body().AddEmpty().Add("\xff"))};
     }},
    {"RecordBatchBeforeItsDictionary", DictionaryColumn,
     [] {
       return std::vector<Message>{
           BatchMessage(1, {{1, 0}}, Body().AddEmpty().Add(std::string(1, '\0')))};
     }},
    {"DictionaryOfAnUnknownId", DictionaryColumn,
     [] { return std::vector<Message>{TwoWordDictionary(8)}; }},
    {"DictionaryWithoutData", DictionaryColumn,
     [] {
       MessageBuilder b;
       return std::vector<Message>{
           {b.Finish(HeaderCode::kDictionaryBatch, b.DictionaryBatch(7, 0, false), 0), ""}};
     }},
    {"DictionaryShorterThanItsBatch", DictionaryColumn,
     [] {
       return std::vector<Message>{DictionaryMessage(
           7, 5, {{2, 0}}, Body().AddEmpty().Add(Int32s({0, 1, 3})).Add("abc"), false)};
     }},
    {"DictionaryBeforeTheSchema", nullptr,
     [] { return std::vector<Message>{TwoWordDictionary(7)}; }},
    {"SecondSchema", Int32Column, [] { return std::vector<Message>{SchemaMessage(Int32Column)}; }},
};

TEST(MessageDecoderTest, RejectsHostileRecordAndDictionaryBatches) {
  for (std::span<const HostileBatch> table :
       {std::span<const HostileBatch>(kHostileBatches),
        std::span<const HostileBatch>(kHostileDictionaries)}) {
    for (const HostileBatch& c : table) {
      std::vector<Message> messages;
      if (c.schema != nullptr) messages.push_back(SchemaMessage(c.schema));
      for (Message& m : c.messages()) messages.push_back(std::move(m));
      Status s = DecodeMessages(messages);
      EXPECT_EQ(s.code(), StatusCode::kCorruption) << c.name << ": " << s.ToString();
    }
  }
}

TEST(MessageDecoderTest, FixedSizeBinaryOfWidthZeroDecodes) {
  // Used to divide by the bit width (SIGFPE) while sizing the values buffer.
  Fields (*schema)(MessageBuilder&) = [](MessageBuilder& b) -> Fields {
    return std::vector<Ref>{b.Field(TypeCode::kFixedSizeBinary, b.FixedSizeBinary(0))};
  };
  int batches = 0;
  Status s = DecodeMessages(
      {SchemaMessage(schema), BatchMessage(3, {{3, 0}}, Body().AddEmpty().AddEmpty())}, &batches);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(batches, 1);
}

TEST(MessageDecoderTest, DictionaryDeltaOfListValuesIsNotImplemented) {
  // Used to read the third buffer of a two-buffer list node while concatenating.
  Fields (*schema)(MessageBuilder&) = [](MessageBuilder& b) -> Fields {
    Ref item = b.Field(TypeCode::kInt, b.Int(32, true), std::vector<Ref>{}, 0, "item");
    return std::vector<Ref>{b.Field(TypeCode::kList, b.Empty(), std::vector<Ref>{item},
                                    b.DictionaryEncoding(1, b.Int(8, true)))};
  };
  Body values = Body().AddEmpty().Add(Int32s({0, 2})).AddEmpty().Add(Int32s({4, 5}));
  std::vector<Message> messages = {SchemaMessage(schema),
                                   DictionaryMessage(1, 1, {{1, 0}, {2, 0}}, values, false),
                                   DictionaryMessage(1, 1, {{1, 0}, {2, 0}}, values, true)};
  EXPECT_EQ(DecodeMessages(messages).code(), StatusCode::kNotImplemented);
  // A replacement (not a delta) of the same dictionary is fine.
  messages.back() = DictionaryMessage(1, 1, {{1, 0}, {2, 0}}, values, false);
  EXPECT_TRUE(DecodeMessages(messages).ok());
}

TEST(MessageDecoderTest, DictionaryDeltasCannotGrowPastTheLengthLimit) {
  Fields (*schema)(MessageBuilder&) = [](MessageBuilder& b) -> Fields {
    return std::vector<Ref>{b.Field(TypeCode::kNull, b.Empty(), std::vector<Ref>{},
                                    b.DictionaryEncoding(3, b.Int(32, true)))};
  };
  const int64_t huge = int64_t{1} << 40;
  std::vector<Message> messages = {SchemaMessage(schema),
                                   DictionaryMessage(3, huge, {{huge, 0}}, Body(), false),
                                   DictionaryMessage(3, huge, {{huge, 0}}, Body(), true)};
  EXPECT_EQ(DecodeMessages(messages).code(), StatusCode::kCorruption);
}

TEST(MessageDecoderTest, MisalignedStructAndInt64VectorsDecode) {
  // The verifier checks only the 4-byte length prefix of a vector, so a hostile writer can put
  // 8-byte FieldNode/Buffer structs and int64 counts at 4 mod 8 (misaligned loads under UBSan).
  Body ints = Body().AddEmpty().Add(Int32s({1, 2, 3}));
  int batches = 0;
  Status s = DecodeMessages(
      {SchemaMessage(Int32Column), BatchMessage(3, {{3, 0}}, ints, Placement::kMisaligned)},
      &batches);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::string view(16, '\0');
  int32_t size = 2;
  std::memcpy(view.data(), &size, 4);
  std::memcpy(view.data() + 4, "hi", 2);
  Fields (*views)(MessageBuilder&) = [](MessageBuilder& b) -> Fields {
    return std::vector<Ref>{b.Field(TypeCode::kUtf8View, b.Empty())};
  };
  s = DecodeMessages(
      {SchemaMessage(views), BatchMessage(1, {{1, 0}}, Body().AddEmpty().Add(view),
                                          Placement::kMisaligned, std::vector<int64_t>{0})},
      &batches);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(batches, 2);
}

TEST(MessageDecoderTest, MisalignedMetadataDecodes) {
  // Flight hands over the flatbuffer wherever it sits in the gRPC message.
  Message schema = SchemaMessage(Int32Column);
  Message batch = BatchMessage(3, {{3, 0}}, Body().AddEmpty().Add(Int32s({1, 2, 3})));
  MessageDecoder decoder;
  for (const Message& m : {schema, batch}) {
    std::string shifted = "x" + m.flatbuffer;
    auto r = decoder.Decode(std::string_view(shifted).substr(1), m.body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
}

TEST(StreamReaderTest, LegacyFramingWithoutContinuationMarkersDecodes) {
  // Pre-0.15 streams: <int32 length> <flatbuffer> <padding> <body>, the length padded so the
  // body is 8-byte aligned: every flatbuffer sits at 4 mod 8.
  Message schema = SchemaMessage(Int32Column);
  Message batch = BatchMessage(3, {{3, 0}}, Body().AddEmpty().Add(Int32s({1, 2, 3})));
  std::string stream;
  for (const Message& m : {schema, batch}) {
    std::string padded = m.flatbuffer;
    while ((4 + padded.size()) % 8 != 0) padded += '\0';
    auto size = static_cast<int32_t>(padded.size());
    stream.append(reinterpret_cast<const char*>(&size), 4);
    stream += padded + m.body;
  }
  stream += std::string(4, '\0');
  auto decoded = DecodeAll(stream);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->batches.size(), 1u);
  EXPECT_EQ(decoded->batches[0]->length, 3);
}

TEST(MessageDecoderTest, MetadataOfTwoGibibytesIsCorrupt) {
  // The flatbuffers verifier asserts its buffer is below 2 GiB; reject before building it.
  const size_t size = size_t{1} << 31;
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  MessageDecoder decoder;
  auto r = decoder.Decode(std::string_view(static_cast<const char*>(p), size), "");
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  munmap(p, size);
}

}  // namespace
}  // namespace skade::arrow::ipc
