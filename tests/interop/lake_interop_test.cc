// Tables written through the `skade` CLI, read back by independent readers: icebird reads
// the same rows as `skade sql`; hyparquet finds the Iceberg field ids in every data file;
// avsc reads the manifests and manifest lists with their field ids and header keys.
// The readers are Node packages pinned in tests/interop/package-lock.json; node and
// node_modules are required (the setup script installs them), so a missing one fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/testing/build_paths.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ProcessResult;
using testing::RunProcess;
using testing::ShellQuote;

const std::string kInteropDir = skade::testing::SourcePath("tests/interop");

// Parses the JSON a tool printed; fails the test (and returns null) if it isn't JSON.
Json ParseOutput(const ProcessResult& r, const std::string& what) {
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << what << " printed no JSON:\n" << r.out << "\n" << r.err;
  return j.is_discarded() ? Json() : j;
}

// Runs a Node script from tests/interop on `args`; fails the test if it fails.
Json RunNode(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = "node " + ShellQuote(kInteropDir + "/" + script);
  for (const auto& a : args) cmd += " " + ShellQuote(a);
  ProcessResult r = RunProcess(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  if (r.exit_code != 0) return Json();
  return ParseOutput(r, script);
}

// The file behind a location recorded in table metadata: the table's recorded `location`
// prefix maps to the folder the table was found in.
std::string LocalPath(const std::string& location, const std::string& table_dir,
                      const std::string& recorded) {
  if (recorded.rfind(location, 0) == 0) return table_dir + recorded.substr(location.size());
  ADD_FAILURE() << recorded << " is outside the table location " << location;
  return recorded;
}

// Field ids of an Iceberg schema (spec JSON) by dotted name; list elements are "x.element",
// map keys/values "x.key"/"x.value".
void IcebergFieldIds(const Json& type, const std::string& prefix, std::map<std::string, int>* out) {
  if (!type.is_object()) return;
  const std::string kind = type.value("type", "");
  if (kind == "struct") {
    for (const Json& f : type["fields"]) {
      std::string name = prefix.empty() ? f["name"].get<std::string>()
                                        : prefix + "." + f["name"].get<std::string>();
      (*out)[name] = f["id"].get<int>();
      IcebergFieldIds(f["type"], name, out);
    }
  } else if (kind == "list") {
    (*out)[prefix + ".element"] = type["element-id"].get<int>();
    IcebergFieldIds(type["element"], prefix + ".element", out);
  } else if (kind == "map") {
    (*out)[prefix + ".key"] = type["key-id"].get<int>();
    (*out)[prefix + ".value"] = type["value-id"].get<int>();
    IcebergFieldIds(type["key"], prefix + ".key", out);
    IcebergFieldIds(type["value"], prefix + ".value", out);
  }
}

// Field ids found in a Parquet schema (hyparquet_read.mjs output) by the same dotted names:
// the repeated middle level of a 3-level list ("x.list.element") and of a map
// ("x.key_value.key") are dropped.
std::map<std::string, int> ParquetFieldIds(const Json& columns) {
  std::map<std::string, int> out;
  for (const Json& c : columns) {
    if (c["field_id"].is_null()) continue;
    std::string path = c["path"].get<std::string>();
    for (const char* middle : {".list.element", ".key_value.key", ".key_value.value"}) {
      size_t at;
      while ((at = path.find(middle)) != std::string::npos) {
        path.replace(at, std::string(middle).size(),
                     std::string(middle).substr(std::string(middle).find('.', 1)));
      }
    }
    out[path] = c["field_id"].get<int>();
  }
  return out;
}

// Avro field ids by dotted name (avro_dump.mjs output), recursively through unions.
void AvroFieldIds(const Json& type, const std::string& prefix, std::map<std::string, int>* out) {
  if (type.is_array()) {
    for (const Json& branch : type) AvroFieldIds(branch, prefix, out);
    return;
  }
  if (!type.is_object()) return;
  const std::string kind = type.value("type", "");
  if (kind == "record") {
    for (const Json& f : type["fields"]) {
      std::string name = prefix.empty() ? f["name"].get<std::string>()
                                        : prefix + "." + f["name"].get<std::string>();
      if (f.contains("field-id")) (*out)[name] = f["field-id"].get<int>();
      AvroFieldIds(f["type"], name, out);
    }
  } else if (kind == "array") {
    if (type.contains("element-id")) (*out)[prefix + ".element"] = type["element-id"].get<int>();
    AvroFieldIds(type["items"], prefix, out);
  }
}

// avsc prints a union value as {"branch": value}; this returns the value.
Json Unwrap(const Json& v) {
  if (v.is_object() && v.size() == 1) return v.begin().value();
  return v;
}

// Days since 1970-01-01 of the date an ISO text starts with ("YYYY-MM-DD…"); proleptic
// Gregorian, by the well-known civil-to-days arithmetic (era of 400 years).
int64_t DaysFromIsoDate(const std::string& iso) {
  int64_t y = std::stoll(iso.substr(0, 4));
  const int64_t m = std::stoll(iso.substr(5, 2));
  const int64_t d = std::stoll(iso.substr(8, 2));
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Rows keyed by their "id" value (every test table has a unique id column).
std::map<std::string, Json> ById(const Json& rows) {
  std::map<std::string, Json> out;
  for (const Json& r : rows) {
    std::string id = r["id"].is_string() ? r["id"].get<std::string>() : r["id"].dump();
    EXPECT_TRUE(out.emplace(id, r).second) << "duplicate id " << id;
  }
  return out;
}

class LakeInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult node = RunProcess("node --version");
    ASSERT_EQ(node.exit_code, 0) << "node is required (scripts/setup.sh installs it): " << node.err;
    for (const char* pkg : {"icebird", "hyparquet", "hyparquet-compressors", "avsc"}) {
      ASSERT_TRUE(fs::exists(kInteropDir + "/node_modules/" + pkg + "/package.json"))
          << pkg << " is missing from " << kInteropDir << "/node_modules (run scripts/setup.sh)";
    }
    warehouse_ = tmp_.Path("lake");
  }

  // Runs skade on the test's warehouse.
  ProcessResult Skade(const std::string& args) {
    return RunProcess(std::string(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " " +
                      args);
  }

  // Runs skade and fails the test unless it succeeds.
  std::string SkadeOk(const std::string& args) {
    ProcessResult r = Skade(args);
    EXPECT_EQ(r.exit_code, 0) << "skade " << args << "\n" << r.err;
    return r.out;
  }

  // `skade sql ... --format json` as parsed JSON.
  Json SqlJson(const std::string& sql) {
    ProcessResult r = Skade("sql " + ShellQuote(sql) + " --format json");
    EXPECT_EQ(r.exit_code, 0) << sql << "\n" << r.err;
    return ParseOutput(r, "skade sql");
  }

  // `skade inspect NS.T --json`.
  Json Inspect(const std::string& table) {
    ProcessResult r = Skade("inspect " + table + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json j = ParseOutput(r, "skade inspect");
    EXPECT_FALSE(j.contains("manifests_error")) << j.value("manifests_error", "");
    return j;
  }

  // The rows icebird reads from the table's current metadata.
  Json IcebirdRows(const Json& inspect, std::set<std::string>* fetched = nullptr) {
    Json j = RunNode("icebird_read.mjs", {inspect["table_dir"].get<std::string>(),
                                          inspect["metadata_file"].get<std::string>()});
    if (fetched != nullptr && j.contains("fetched")) {
      for (const Json& f : j["fetched"]) fetched->insert(f.get<std::string>());
    }
    return j.is_object() ? j["rows"] : Json::array();
  }

  // Live data files of the current snapshot, as local paths.
  std::vector<std::string> DataFiles(const Json& inspect) {
    std::vector<std::string> files;
    const std::string location = inspect["metadata"]["location"];
    const std::string dir = inspect["table_dir"];
    for (const Json& m : inspect["manifests"]) {
      if (m["content"] != "data") continue;
      for (const Json& f : m["files"]) {
        if (f["status"] == "deleted") continue;
        files.push_back(LocalPath(location, dir, f["file_path"].get<std::string>()));
      }
    }
    return files;
  }

  // Checks that icebird reads exactly what `skade sql` returns for `query` (which must
  // render every column the way icebird_read.mjs prints it).
  void ExpectIcebirdMatchesSql(const std::string& table, const std::string& query,
                               size_t expected_rows) {
    Json inspect = Inspect(table);
    std::set<std::string> fetched;
    Json icebird = IcebirdRows(inspect, &fetched);
    Json skade = SqlJson(query);
    ASSERT_TRUE(icebird.is_array());
    ASSERT_TRUE(skade.is_array());
    EXPECT_EQ(icebird.size(), expected_rows);
    EXPECT_EQ(skade.size(), expected_rows);
    std::map<std::string, Json> a = ById(icebird);
    std::map<std::string, Json> b = ById(skade);
    for (const auto& [id, row] : b) {
      auto it = a.find(id);
      if (it == a.end()) {
        ADD_FAILURE() << "icebird lacks row id " << id << ": " << row.dump();
        continue;
      }
      EXPECT_EQ(it->second, row) << "id " << id << "\n icebird: " << it->second.dump()
                                 << "\n skade:   " << row.dump();
    }
    for (const auto& [id, row] : a)
      EXPECT_TRUE(b.count(id)) << "icebird has extra row " << row.dump();
    // icebird opened every live data file (and, being a reader, only files of the table).
    const std::string dir = inspect["table_dir"];
    for (const std::string& f : DataFiles(inspect)) {
      EXPECT_TRUE(fetched.count(fs::path(f).lexically_relative(dir).string()))
          << "icebird did not read " << f;
    }
  }

  // hyparquet reads every live data file: its Parquet field ids are the Iceberg schema's, its
  // row count is the manifest's. Returns the files' rows by file path (as recorded).
  std::map<std::string, Json> ExpectParquetFieldIds(const Json& inspect) {
    std::map<std::string, Json> rows_by_file;
    const Json& m = inspect["metadata"];
    Json schema;
    for (const Json& s : m["schemas"]) {
      if (s["schema-id"] == m["current-schema-id"]) schema = s;
    }
    std::map<std::string, int> iceberg_ids;
    IcebergFieldIds(schema, "", &iceberg_ids);
    EXPECT_FALSE(iceberg_ids.empty());
    std::map<int, std::string> primitive_types;
    for (const Json& f : schema["fields"]) {
      if (f["type"].is_string()) primitive_types[f["id"].get<int>()] = f["type"];
    }
    const std::string location = m["location"];
    const std::string dir = inspect["table_dir"];
    int files = 0;
    for (const Json& manifest : inspect["manifests"]) {
      for (const Json& f : manifest["files"]) {
        if (f["status"] == "deleted") continue;
        std::string local = LocalPath(location, dir, f["file_path"].get<std::string>());
        Json pq = RunNode("hyparquet_read.mjs", {local});
        if (!pq.is_object()) continue;
        ++files;
        EXPECT_EQ(ParquetFieldIds(pq["schema"]), iceberg_ids) << local << "\n"
                                                              << pq["schema"].dump();
        // Parquet timestamps are UTC-adjusted exactly for timestamptz (spec "Parquet" types).
        for (const Json& c : pq["schema"]) {
          if (c["field_id"].is_null() || c["logical_type"] != "TIMESTAMP") continue;
          auto type = primitive_types.find(c["field_id"].get<int>());
          if (type == primitive_types.end()) {
            ADD_FAILURE() << "no primitive Iceberg field for " << c.dump();
            continue;
          }
          EXPECT_EQ(c["adjusted_to_utc"], type->second == "timestamptz") << c.dump();
        }
        EXPECT_EQ(pq["num_rows"], std::to_string(f["record_count"].get<int64_t>())) << local;
        EXPECT_EQ(pq["rows"].size(), f["record_count"].get<size_t>()) << local;
        EXPECT_EQ(static_cast<int64_t>(fs::file_size(local)),
                  f["file_size_in_bytes"].get<int64_t>())
            << local;
        rows_by_file[f["file_path"].get<std::string>()] = pq["rows"];
      }
    }
    EXPECT_GT(files, 0);
    return rows_by_file;
  }

  // avsc reads the current snapshot's manifest list and manifests: header keys, field ids,
  // and entries that agree with the files on disk. Returns the manifest entries (avsc form).
  std::vector<Json> ExpectAvroManifests(const Json& inspect) {
    std::vector<Json> entries;
    const Json& m = inspect["metadata"];
    const std::string location = m["location"];
    const std::string dir = inspect["table_dir"];
    Json snapshot;
    for (const Json& s : m["snapshots"]) {
      if (s["snapshot-id"] == m["current-snapshot-id"]) snapshot = s;
    }
    EXPECT_TRUE(snapshot.is_object());
    if (!snapshot.is_object()) return entries;
    Json list = RunNode("avro_dump.mjs",
                        {LocalPath(location, dir, snapshot["manifest-list"].get<std::string>())});
    if (!list.is_object()) return entries;
    EXPECT_EQ(list["metadata"]["snapshot-id"],
              std::to_string(snapshot["snapshot-id"].get<int64_t>()));
    if (snapshot.contains("parent-snapshot-id")) {
      EXPECT_EQ(list["metadata"]["parent-snapshot-id"],
                std::to_string(snapshot["parent-snapshot-id"].get<int64_t>()));
    }
    EXPECT_EQ(list["metadata"]["sequence-number"],
              std::to_string(snapshot["sequence-number"].get<int64_t>()));
    EXPECT_EQ(list["metadata"]["format-version"], std::to_string(m["format-version"].get<int>()));
    std::map<std::string, int> list_ids;
    AvroFieldIds(list["schema"], "", &list_ids);
    EXPECT_EQ(list_ids["manifest_path"], 500);
    EXPECT_EQ(list_ids["manifest_length"], 501);
    EXPECT_EQ(list_ids["partition_spec_id"], 502);
    EXPECT_EQ(list_ids["added_snapshot_id"], 503);
    EXPECT_EQ(list_ids["added_files_count"], 504);
    EXPECT_EQ(list_ids["partitions"], 507);
    EXPECT_EQ(list_ids["content"], 517);
    EXPECT_EQ(list_ids["sequence_number"], 515);
    EXPECT_EQ(list_ids["min_sequence_number"], 516);
    EXPECT_FALSE(list["records"].empty());

    Json spec;
    for (const Json& s : m["partition-specs"]) {
      if (s["spec-id"] == m["default-spec-id"]) spec = s;
    }
    for (const Json& mf : list["records"]) {
      std::string path = LocalPath(location, dir, mf["manifest_path"].get<std::string>());
      if (!fs::exists(path)) {
        ADD_FAILURE() << "manifest " << path << " does not exist";
        continue;
      }
      EXPECT_EQ(mf["manifest_length"], std::to_string(fs::file_size(path))) << path;
      Json man = RunNode("avro_dump.mjs", {path});
      if (!man.is_object()) continue;
      for (const char* key :
           {"schema", "partition-spec", "partition-spec-id", "format-version", "content"}) {
        EXPECT_TRUE(man["metadata"].contains(key)) << path << " lacks header key " << key;
      }
      EXPECT_EQ(man["metadata"]["content"], "data");
      EXPECT_EQ(man["metadata"]["format-version"], std::to_string(m["format-version"].get<int>()));
      EXPECT_EQ(man["metadata"]["partition-spec-id"],
                std::to_string(mf["partition_spec_id"].get<int>()));
      // The header's schema and spec are the table's.
      Json header_schema = Json::parse(man["metadata"].value("schema", "null"), nullptr, false);
      std::map<std::string, int> header_ids, table_ids;
      IcebergFieldIds(header_schema, "", &header_ids);
      for (const Json& s : m["schemas"]) {
        if (s["schema-id"] == m["current-schema-id"]) IcebergFieldIds(s, "", &table_ids);
      }
      EXPECT_EQ(header_ids, table_ids) << path;
      Json header_spec =
          Json::parse(man["metadata"].value("partition-spec", "null"), nullptr, false);
      EXPECT_EQ(header_spec, spec["fields"]) << path;

      std::map<std::string, int> ids;
      AvroFieldIds(man["schema"], "", &ids);
      EXPECT_EQ(ids["status"], 0);
      EXPECT_EQ(ids["snapshot_id"], 1);
      EXPECT_EQ(ids["data_file"], 2);
      EXPECT_EQ(ids["sequence_number"], 3);
      EXPECT_EQ(ids["file_sequence_number"], 4);
      EXPECT_EQ(ids["data_file.content"], 134);
      EXPECT_EQ(ids["data_file.file_path"], 100);
      EXPECT_EQ(ids["data_file.file_format"], 101);
      EXPECT_EQ(ids["data_file.partition"], 102);
      EXPECT_EQ(ids["data_file.record_count"], 103);
      EXPECT_EQ(ids["data_file.file_size_in_bytes"], 104);
      for (const Json& pf : spec["fields"]) {
        EXPECT_EQ(ids["data_file.partition." + pf["name"].get<std::string>()],
                  pf["field-id"].get<int>())
            << pf.dump();
      }
      for (const Json& e : man["records"]) {
        const Json& df = e["data_file"];
        if (e["status"] != 2) {
          std::string file = LocalPath(location, dir, df["file_path"].get<std::string>());
          EXPECT_TRUE(fs::exists(file)) << file;
          if (fs::exists(file)) {
            EXPECT_EQ(df["file_size_in_bytes"], std::to_string(fs::file_size(file)));
          }
        }
        EXPECT_EQ(df["file_format"], "PARQUET");
        EXPECT_EQ(df["content"], 0);
        entries.push_back(e);
      }
    }
    return entries;
  }

  testing::TempDir tmp_;
  std::string warehouse_;
};

// Every column type icebird can read, unpartitioned; three appends, then an overwrite.
TEST_F(LakeInteropTest, IcebirdReadsAllTypesAfterAppendsAndOverwrite) {
  SkadeOk("ns create interop");
  SkadeOk(
      "create interop.all_types --schema 'id BIGINT NOT NULL, i INTEGER, s VARCHAR, d DOUBLE, "
      "amount DECIMAL(12, 2), day DATE, ts TIMESTAMPTZ, flag BOOLEAN, tags INTEGER[], "
      "point STRUCT(x INTEGER, label VARCHAR)'");
  const std::string insert1 =
      "SELECT * FROM (VALUES "
      "(1, 7, 'alpha', 1.5, 12.30::DECIMAL(12,2), DATE '2024-01-02', TIMESTAMPTZ '2024-01-02 "
      "03:04:05.678+00', "
      "true, [1, 2, 3], {'x': 1, 'label': 'one'}), "
      "(9007199254740993, -2147483648, 'ünïcødé ✓', -0.25, -0.05::DECIMAL(12,2), DATE "
      "'1969-12-31', "
      "TIMESTAMPTZ '1969-12-31 23:59:59.001+00', false, [], {'x': NULL, 'label': 'neg'}), "
      "(-9223372036854775808, 2147483647, '', 3.141592653589793, 9999999999.99::DECIMAL(12,2), "
      "DATE '2000-02-29', "
      "TIMESTAMPTZ '2038-01-19 03:14:08+00', NULL, [NULL, 5], NULL)) "
      "t(id, i, s, d, amount, day, ts, flag, tags, point)";
  SkadeOk("ingest interop.all_types --sql " + ShellQuote(insert1));
  // Columns may come in any order and some may be missing (null).
  SkadeOk("ingest interop.all_types --sql " +
          ShellQuote("SELECT 4 AS id, 'delta' AS s, TIMESTAMPTZ '2024-06-30 12:00:00+00' AS ts"));
  SkadeOk(
      "ingest interop.all_types --sql " +
      ShellQuote(
          "SELECT range + 100 AS id, CAST(range AS INTEGER) AS i, 'gen-' || range AS s, range / 4 "
          "AS d, "
          "CAST(range / 8 AS DECIMAL(12,2)) AS amount, DATE '2024-03-01' + CAST(range AS INTEGER) "
          "AS day, "
          "TIMESTAMPTZ '2024-03-01 00:00:00+00' + range * INTERVAL 90 MINUTE AS ts, range % 2 = 0 "
          "AS flag, "
          "[CAST(range AS INTEGER)] AS tags, {'x': CAST(range AS INTEGER), 'label': 'r'} AS point "
          "FROM range(50)"));

  // The rendering icebird_read.mjs uses: long as text, decimal with its scale, date as
  // YYYY-MM-DD, timestamps as ISO UTC milliseconds.
  const std::string query =
      "SELECT CAST(id AS VARCHAR) AS id, i, s, d, CAST(amount AS VARCHAR) AS amount, CAST(day AS "
      "VARCHAR) AS day, "
      "strftime(make_timestamp(epoch_us(ts)), '%Y-%m-%dT%H:%M:%S.%gZ') AS ts, flag, tags, point "
      "FROM interop.all_types";
  ExpectIcebirdMatchesSql("interop.all_types", query, 54);

  // Spot checks against literal values, so that a shared misreading can't hide.
  Json icebird = IcebirdRows(Inspect("interop.all_types"));
  std::map<std::string, Json> rows = ById(icebird);
  ASSERT_TRUE(rows.count("9007199254740993"));
  EXPECT_EQ(rows["9007199254740993"]["s"], "ünïcødé ✓");
  EXPECT_EQ(rows["9007199254740993"]["i"], -2147483648);
  EXPECT_EQ(rows["9007199254740993"]["amount"], "-0.05");
  EXPECT_EQ(rows["9007199254740993"]["day"], "1969-12-31");
  EXPECT_EQ(rows["9007199254740993"]["ts"], "1969-12-31T23:59:59.001Z");
  EXPECT_EQ(rows["9007199254740993"]["tags"], Json::array());
  EXPECT_EQ(rows["9007199254740993"]["point"], Json({{"x", nullptr}, {"label", "neg"}}));
  ASSERT_TRUE(rows.count("-9223372036854775808"));
  EXPECT_EQ(rows["-9223372036854775808"]["amount"], "9999999999.99");
  EXPECT_EQ(rows["-9223372036854775808"]["tags"], Json({nullptr, 5}));
  EXPECT_TRUE(rows["-9223372036854775808"]["point"].is_null());
  EXPECT_TRUE(rows["-9223372036854775808"]["flag"].is_null());
  EXPECT_EQ(rows["1"]["ts"], "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(rows["1"]["d"], 1.5);
  EXPECT_EQ(rows["4"]["s"], "delta");
  EXPECT_TRUE(rows["4"]["i"].is_null());

  Json inspect = Inspect("interop.all_types");
  ExpectParquetFieldIds(inspect);
  std::vector<Json> entries = ExpectAvroManifests(inspect);
  EXPECT_EQ(entries.size(), 3u);  // one file per append

  // Overwrite replaces everything: icebird sees only the new rows.
  SkadeOk("ingest interop.all_types --mode overwrite --sql " +
          ShellQuote(
              "SELECT 500 AS id, 'after' AS s, [7, 8] AS tags, {'x': 2, 'label': NULL} AS point"));
  ExpectIcebirdMatchesSql("interop.all_types", query, 1);
  Json after = IcebirdRows(Inspect("interop.all_types"));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0]["id"], "500");
  EXPECT_EQ(after[0]["tags"], Json({7, 8}));
  EXPECT_EQ(after[0]["point"], Json({{"x", 2}, {"label", nullptr}}));
  inspect = Inspect("interop.all_types");
  ExpectParquetFieldIds(inspect);
  ExpectAvroManifests(inspect);
}

// hyparquet keeps microseconds (icebird stops at milliseconds): the stored values are exact.
TEST_F(LakeInteropTest, HyparquetReadsExactTimestampsAndDecimals) {
  SkadeOk("ns create interop");
  SkadeOk(
      "create interop.exact --schema 'id BIGINT NOT NULL, ts TIMESTAMPTZ, amount DECIMAL(38, 10), "
      "day DATE'");
  SkadeOk("ingest interop.exact --sql " +
          ShellQuote("SELECT 1 AS id, TIMESTAMPTZ '2024-02-29 23:59:59.123456+00' AS ts, "
                     "12.5::DECIMAL(38,10) AS amount, DATE '0001-01-01' AS day"));
  Json inspect = Inspect("interop.exact");
  std::map<std::string, Json> rows = ExpectParquetFieldIds(inspect);
  ASSERT_EQ(rows.size(), 1u);
  const Json& row = rows.begin()->second.at(0);
  EXPECT_EQ(row["id"], "1");
  EXPECT_EQ(row["ts"], "2024-02-29T23:59:59.123456Z");
  EXPECT_EQ(row["amount"], 12.5);
  EXPECT_EQ(row["day"], "0001-01-01");
}

// Partitioned tables (identity, day, bucket, truncate): icebird reads them like skade, and
// the partition values in the manifests (read by avsc) hold for the rows in each file
// (read by hyparquet).
TEST_F(LakeInteropTest, PartitionedTablesReadAlikeAndFilesMatchTheirPartitions) {
  SkadeOk("ns create interop");
  SkadeOk("ns create interop.parts");
  SkadeOk(
      "create interop.parts.events --schema 'id BIGINT NOT NULL, region VARCHAR, ts TIMESTAMPTZ, "
      "name VARCHAR, n INTEGER' --partition-by 'region, day(ts), bucket(4, id), truncate(3, "
      "name)'");
  SkadeOk(
      "create interop.parts.by_int --schema 'id BIGINT NOT NULL, n INTEGER, day DATE' "
      "--partition-by 'truncate(10, n), month(day)'");
  const std::string rows_sql =
      "SELECT range AS id, CASE WHEN range % 3 = 0 THEN 'eu' WHEN range % 3 = 1 THEN 'us' ELSE "
      "NULL END AS region, "
      "TIMESTAMPTZ '2024-05-01 22:00:00+00' + (range + OFFSET) * INTERVAL 7 HOUR AS ts, "
      "CASE WHEN range % 5 = 0 THEN NULL ELSE 'name-' || (range % 4) END AS name, CAST(range AS "
      "INTEGER) - 20 AS n "
      "FROM range(OFFSET, OFFSET + 12)";
  for (int offset : {0, 12, 24}) {
    std::string sql = rows_sql;
    size_t at;
    while ((at = sql.find("OFFSET")) != std::string::npos)
      sql.replace(at, 6, std::to_string(offset));
    SkadeOk("ingest interop.parts.events --sql " + ShellQuote(sql));
  }
  SkadeOk(
      "ingest interop.parts.by_int --sql " +
      ShellQuote("SELECT range AS id, CAST(range AS INTEGER) * 7 - 50 AS n, DATE '2023-11-20' + "
                 "CAST(range * 3 AS INTEGER) AS day FROM range(40)"));

  const std::string events_query =
      "SELECT CAST(id AS VARCHAR) AS id, region, strftime(make_timestamp(epoch_us(ts)), "
      "'%Y-%m-%dT%H:%M:%S.%gZ') AS ts, "
      "name, n FROM \"interop.parts\".events";
  ExpectIcebirdMatchesSql("interop.parts.events", events_query, 36);
  ExpectIcebirdMatchesSql("interop.parts.by_int",
                          "SELECT CAST(id AS VARCHAR) AS id, n, CAST(day AS VARCHAR) AS day FROM "
                          "\"interop.parts\".by_int",
                          40);

  // Each file's partition tuple (avsc) holds for each of its rows (hyparquet).
  Json inspect = Inspect("interop.parts.events");
  std::map<std::string, Json> file_rows = ExpectParquetFieldIds(inspect);
  std::vector<Json> entries = ExpectAvroManifests(inspect);
  EXPECT_GT(entries.size(), 10u);
  size_t rows_seen = 0;
  for (const Json& e : entries) {
    const Json& df = e["data_file"];
    const Json& part = df["partition"];
    auto it = file_rows.find(df["file_path"].get<std::string>());
    ASSERT_NE(it, file_rows.end()) << df["file_path"];
    Json bucket = Unwrap(part["id_bucket"]);
    ASSERT_TRUE(bucket.is_number_integer()) << part.dump();
    EXPECT_GE(bucket.get<int>(), 0);
    EXPECT_LT(bucket.get<int>(), 4);
    for (const Json& row : it->second) {
      ++rows_seen;
      EXPECT_EQ(Unwrap(part["region"]), row["region"]) << row.dump();
      // ts_day: days since 1970-01-01 of the UTC date.
      EXPECT_EQ(Unwrap(part["ts_day"]), DaysFromIsoDate(row["ts"].get<std::string>()))
          << row.dump();
      if (row["name"].is_null()) {
        EXPECT_TRUE(part["name_trunc"].is_null()) << part.dump();
      } else {
        EXPECT_EQ(Unwrap(part["name_trunc"]), row["name"].get<std::string>().substr(0, 3))
            << row.dump();
      }
    }
  }
  EXPECT_EQ(rows_seen, 36u);

  inspect = Inspect("interop.parts.by_int");
  file_rows = ExpectParquetFieldIds(inspect);
  entries = ExpectAvroManifests(inspect);
  for (const Json& e : entries) {
    const Json& part = e["data_file"]["partition"];
    for (const Json& row : file_rows[e["data_file"]["file_path"].get<std::string>()]) {
      // truncate(10, n) rounds toward negative infinity: n - (((n % 10) + 10) % 10).
      int n = row["n"].get<int>();
      EXPECT_EQ(Unwrap(part["n_trunc"]), n - (((n % 10) + 10) % 10)) << row.dump();
      int year = std::stoi(row["day"].get<std::string>().substr(0, 4));
      int month = std::stoi(row["day"].get<std::string>().substr(5, 2));
      EXPECT_EQ(Unwrap(part["day_month"]), (year - 1970) * 12 + month - 1) << row.dump();
    }
  }

  // An overwrite of a partitioned table: only the new rows remain, for icebird too.
  SkadeOk(
      "ingest interop.parts.events --mode overwrite --sql " +
      ShellQuote(
          "SELECT 1000 + range AS id, 'ap' AS region, TIMESTAMPTZ '2025-01-01 00:00:00+00' AS ts, "
          "'zz-top' AS name, 1 AS n FROM range(5)"));
  ExpectIcebirdMatchesSql("interop.parts.events", events_query, 5);
  inspect = Inspect("interop.parts.events");
  ExpectParquetFieldIds(inspect);
  ExpectAvroManifests(inspect);
}

// Merged manifests (commit.manifest.min-count-to-merge=3): icebird reads the table like skade,
// and avsc reads the merged manifests, whose older files are EXISTING with their sequence
// numbers written out (spec "Sequence Number Inheritance").
TEST_F(LakeInteropTest, MergedManifestsReadAlike) {
  SkadeOk("ns create interop");
  SkadeOk("create interop.merged --schema 'id BIGINT NOT NULL, region VARCHAR' --partition-by region "
          "--prop commit.manifest.min-count-to-merge=3");
  for (int i = 0; i < 7; ++i) {
    SkadeOk("ingest interop.merged --sql " +
            ShellQuote("SELECT " + std::to_string(i * 10) + " + range AS id, CASE WHEN range % 2 = 0 THEN 'eu' ELSE "
                       "'us' END AS region FROM range(4)"));
  }
  ExpectIcebirdMatchesSql("interop.merged",
                          "SELECT CAST(id AS VARCHAR) AS id, region FROM interop.merged", 28);
  Json inspect = Inspect("interop.merged");
  EXPECT_LT(inspect["manifests"].size(), 3u);
  std::vector<Json> entries = ExpectAvroManifests(inspect);
  EXPECT_EQ(entries.size(), 14u);  // two files (eu, us) per ingest
  std::set<int64_t> sequence_numbers;
  int existing = 0;
  for (const Json& e : entries) {
    if (e["status"] != 0) continue;  // EXISTING
    ++existing;
    Json seq = Unwrap(e["sequence_number"]);
    ASSERT_TRUE(seq.is_number_integer() || seq.is_string()) << e.dump();
    sequence_numbers.insert(seq.is_string() ? std::stoll(seq.get<std::string>()) : seq.get<int64_t>());
    EXPECT_EQ(Unwrap(e["file_sequence_number"]), Unwrap(e["sequence_number"])) << e.dump();
  }
  EXPECT_EQ(existing, 12);  // all but the last ingest's two files
  EXPECT_EQ(sequence_numbers, (std::set<int64_t>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace skade
