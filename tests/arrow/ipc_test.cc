// Arrow IPC stream encode/decode: the Arrow integration fixtures (decoded and compared with
// their JSON twins, then re-encoded), every DuckDB type, compression, and malformed input.
#include "skade/arrow/ipc.h"

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "skade/engine/database.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::arrow::ipc {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(SKADE_FIXTURES_DIR) + "/arrow-ipc";

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
      "node " + testing::ShellQuote(std::string(SKADE_SOURCE_DIR) + "/tests/interop/arrow_read.mjs") + " " +
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
