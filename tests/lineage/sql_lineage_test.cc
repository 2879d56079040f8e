// Lineage from SQL (issue 38): INSERT … SELECT, CREATE TABLE … AS, MERGE, UPDATE … FROM and
// DELETE run through LakeSql (what `skade sql` and Flight SQL run) and through the `skade sql`
// binary name their input tables in the OpenLineage events of the commit they make, with the
// columnLineage facet (1-2-0): each written column with the input columns it derives from and
// how (DIRECT IDENTITY / TRANSFORMATION / AGGREGATION, masking), and the columns acting on all
// rows (INDIRECT JOIN / FILTER / GROUP_BY) — all read from DuckDB's bound plan. The events
// validate against the pinned OpenLineage schemas.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "skade/catalog/open_catalog.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/io/routing_file_io.h"
#include "skade/lineage/run_event.h"
#include "skade/sql/lake_sql.h"
#include "skade/table/table.h"
#include "tests/lineage/pinned_validator.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::lineage {
namespace {

using Json = nlohmann::json;
using testing::RunProcess;
using testing::ShellQuote;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using Fields = std::map<std::string, std::set<std::string>>;

class SqlLineageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("XDG_STATE_HOME", tmp_.Path("state").c_str(), 1);
    warehouse_ = tmp_.Path("lake");
    Cli("ns create sales");
    io_ = io::MakeEnvironmentFileIO();
    catalog::SqlCatalogOptions o;
    o.uri = "sqlite://" + warehouse_ + "/catalog.db";
    o.warehouse = warehouse_;
    auto c = catalog::OpenCatalog(o, *io_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    catalog_ = std::move(*c);
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok());
    db_ = std::move(*db);
    auto lake = sql::LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
    for (const char* statement : {
             "CREATE TABLE orders (id BIGINT, customer BIGINT, amount DECIMAL(10,2), region VARCHAR)",
             "CREATE TABLE customers (id BIGINT, name VARCHAR, country VARCHAR)",
             "INSERT INTO orders VALUES (1, 10, 5.00, 'eu'), (2, 11, 7.50, 'us'), (3, 10, 1.25, 'eu')",
             "INSERT INTO customers VALUES (10, 'ada', 'NO'), (11, 'bob', 'US')",
         }) {
      Sql(statement);
    }
  }

  std::string Cli(const std::string& args) {
    auto r = RunProcess(ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r.out;
  }

  // Runs a write statement in the session schema "sales"; the rows it changed.
  int64_t Sql(const std::string& statement) {
    auto w = engine::ParseStatement(statement);
    EXPECT_TRUE(w.ok()) << statement << ": " << w.status().ToString();
    if (!w.ok()) return -1;
    auto n = lake_->ExecuteWrite(*w, "sales");
    EXPECT_TRUE(n.ok()) << statement << ": " << n.status().ToString();
    return n.ok() ? *n : -1;
  }

  int64_t Head() { return catalog_->LatestCommitSeq().ValueOr(-1); }

  int64_t SnapshotOf(const std::string& table) {
    auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse(table));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? (*t)->CurrentSnapshotId().value_or(-1) : -1;
  }

  // The events of the commits after `after_seq`, as the emitter builds them; also written to
  // `file` (JSON lines) and checked against the pinned schemas.
  std::vector<Json> EventsSince(int64_t after_seq, const std::string& file) {
    auto entries = catalog_->CommitsSince(after_seq, 1000);
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    if (!entries.ok()) return {};
    LineageNaming naming;
    naming.warehouse = warehouse_;
    const CommitEventBuilder builder(*io_, naming);
    std::vector<Json> out;
    std::string lines;
    for (const catalog::CommitLogEntry& e : *entries) {
      for (const std::string& event : builder.Build(e)) {
        lines += event + "\n";
        out.push_back(Json::parse(event));
      }
    }
    testing::WriteFileOrDie(tmp_.Path(file), lines);
    EXPECT_EQ(ValidatePinned(tmp_.Path(file), static_cast<int>(out.size())), "");
    return out;
  }

  static Json CompleteOf(const std::vector<Json>& events, const std::string& job) {
    Json found;
    for (const Json& e : events) {
      if (e["eventType"] == "COMPLETE" && e["job"]["name"] == job) found = e;
    }
    EXPECT_TRUE(found.is_object()) << "no COMPLETE event of " << job;
    return found;
  }

  // The input datasets' names, each with its version ("sales.orders@123"), sorted.
  static std::vector<std::string> Inputs(const Json& event) {
    std::vector<std::string> out;
    for (const Json& in : event["inputs"]) {
      std::string name = in["name"].get<std::string>();
      if (in["facets"].contains("version")) name += "@" + in["facets"]["version"]["datasetVersion"].get<std::string>();
      out.push_back(std::move(name));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The output's columnLineage as "dataset.field SUBTYPE[ masked]" per column, the dataset-wide
  // fields under "*". Every input field names a dataset of the event's inputs, and every
  // transformation's type goes with its subtype.
  static Fields ColumnLineage(const Json& event) {
    std::set<std::pair<std::string, std::string>> inputs;
    for (const Json& in : event["inputs"]) {
      inputs.insert({in["namespace"].get<std::string>(), in["name"].get<std::string>()});
    }
    const Json& facet = event["outputs"][0]["facets"]["columnLineage"];
    EXPECT_TRUE(facet.is_object()) << event.dump();
    Fields out;
    auto add = [&](const Json& field, std::set<std::string>& into) {
      EXPECT_TRUE(inputs.count({field["namespace"].get<std::string>(), field["name"].get<std::string>()}))
          << field.dump();
      std::string name = field["name"].get<std::string>();
      name = name.substr(name.rfind('/') + 1);  // a file's base name
      for (const Json& t : field["transformations"]) {
        const std::string subtype = t["subtype"].get<std::string>();
        const bool direct = subtype == "IDENTITY" || subtype == "TRANSFORMATION" || subtype == "AGGREGATION";
        EXPECT_EQ(t["type"], direct ? "DIRECT" : "INDIRECT") << field.dump();
        into.insert(name + "." + field["field"].get<std::string>() + " " + subtype +
                    (t.value("masking", false) ? " masked" : ""));
      }
    };
    for (const auto& [column, lineage] : facet["fields"].items()) {
      for (const Json& field : lineage["inputFields"]) add(field, out[column]);
    }
    for (const Json& field : facet.value("dataset", Json::array())) add(field, out["*"]);
    return out;
  }

  testing::TempDir tmp_;
  std::string warehouse_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<engine::Database> db_;
  std::unique_ptr<sql::LakeSql> lake_;
};

TEST_F(SqlLineageTest, InsertSelectWithAJoinNamesBothTablesAndEachColumnsOrigin) {
  Sql("CREATE TABLE report (order_id BIGINT, customer VARCHAR, region VARCHAR, amount DECIMAL(10,2))");
  const int64_t head = Head();
  ASSERT_EQ(Sql("INSERT INTO report SELECT o.id, upper(c.name), o.region, o.amount FROM orders o "
                "JOIN customers c ON c.id = o.customer WHERE c.country = 'NO'"),
            2);
  const Json complete = CompleteOf(EventsSince(head, "insert.jsonl"), "append:sales.report");
  EXPECT_THAT(Inputs(complete), ElementsAre("sales.customers@" + std::to_string(SnapshotOf("sales.customers")),
                                            "sales.orders@" + std::to_string(SnapshotOf("sales.orders"))));
  EXPECT_EQ(ColumnLineage(complete),
            (Fields{{"order_id", {"sales.orders.id IDENTITY"}},
                    {"customer", {"sales.customers.name TRANSFORMATION"}},
                    {"region", {"sales.orders.region IDENTITY"}},
                    {"amount", {"sales.orders.amount IDENTITY"}},
                    {"*", {"sales.orders.customer JOIN", "sales.customers.id JOIN", "sales.customers.country FILTER"}}}));
  // The facet's shape, exactly: the same dataset names as the inputs, one transformation.
  const Json& output = complete["outputs"][0];
  EXPECT_EQ(output["facets"]["columnLineage"]["fields"]["order_id"],
            Json::parse(R"({"inputFields":[{"namespace":)" + Json(output["namespace"]).dump() +
                        R"(,"name":"sales.orders","field":"id","transformations":[{"type":"DIRECT","subtype":"IDENTITY"}]}]})"));
}

TEST_F(SqlLineageTest, CreateTableAsWithExpressionsAndAggregates) {
  const int64_t head = Head();
  ASSERT_EQ(Sql("CREATE TABLE totals AS SELECT c.country, count(*) AS n, sum(o.amount) * 2 AS doubled, "
                "max(o.region) FILTER (WHERE o.amount > 2) AS top_region, min(md5(c.name)) AS name_hash "
                "FROM orders o JOIN customers c ON c.id = o.customer GROUP BY c.country"),
            2);
  const std::vector<Json> events = EventsSince(head, "ctas.jsonl");
  CompleteOf(events, "create:sales.totals");
  const Json complete = CompleteOf(events, "append:sales.totals");
  EXPECT_EQ(Inputs(complete).size(), 2u);
  EXPECT_EQ(ColumnLineage(complete),
            (Fields{{"country", {"sales.customers.country IDENTITY"}},
                    {"doubled", {"sales.orders.amount AGGREGATION"}},
                    {"top_region", {"sales.orders.region AGGREGATION", "sales.orders.amount CONDITIONAL"}},
                    {"name_hash", {"sales.customers.name AGGREGATION masked"}},
                    {"*", {"sales.customers.country GROUP_BY", "sales.orders.customer JOIN", "sales.customers.id JOIN"}}}));
  // count(*) reads no column: it is not in the facet.
  EXPECT_FALSE(complete["outputs"][0]["facets"]["columnLineage"]["fields"].contains("n"));
}

TEST_F(SqlLineageTest, MergeNamesTargetAndSourceOnceEach) {
  Sql("CREATE TABLE staged (id BIGINT, name VARCHAR)");
  Sql("INSERT INTO staged VALUES (10, 'Ada'), (12, 'cy')");
  const int64_t customers_before = SnapshotOf("sales.customers");
  const int64_t head = Head();
  ASSERT_EQ(Sql("MERGE INTO customers AS c USING staged AS s ON c.id = s.id "
                "WHEN MATCHED THEN UPDATE SET name = s.name "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, 'SE')"),
            2);
  const Json complete = CompleteOf(EventsSince(head, "merge.jsonl"), "overwrite:sales.customers");
  // The target is read (the rows it rewrites) at the snapshot the overwrite planned: one input
  // with both the version and the scan report.
  EXPECT_THAT(Inputs(complete), ElementsAre("sales.customers@" + std::to_string(customers_before),
                                            "sales.staged@" + std::to_string(SnapshotOf("sales.staged"))));
  for (const Json& in : complete["inputs"]) {
    if (in["name"] == "sales.customers") {
      EXPECT_EQ(in["inputFacets"]["icebergScanReport"]["snapshotId"], customers_before);
    }
  }
  EXPECT_EQ(ColumnLineage(complete),
            (Fields{{"id", {"sales.customers.id IDENTITY", "sales.staged.id IDENTITY"}},
                    {"name", {"sales.staged.name IDENTITY"}},
                    {"country", {"sales.customers.country IDENTITY"}},
                    {"*",
                     {"sales.customers.id JOIN", "sales.staged.id JOIN", "sales.customers.id FILTER",
                      "sales.staged.id FILTER"}}}));
}

TEST_F(SqlLineageTest, UpdateFromNamesTheTablesItReads) {
  const int64_t orders_before = SnapshotOf("sales.orders");
  const int64_t head = Head();
  ASSERT_EQ(Sql("UPDATE orders AS o SET region = lower(c.country) FROM customers c "
                "WHERE c.id = o.customer AND c.name = 'bob'"),
            1);
  const Json complete = CompleteOf(EventsSince(head, "update.jsonl"), "overwrite:sales.orders");
  EXPECT_THAT(Inputs(complete), ElementsAre("sales.customers@" + std::to_string(SnapshotOf("sales.customers")),
                                            "sales.orders@" + std::to_string(orders_before)));
  EXPECT_EQ(ColumnLineage(complete),
            (Fields{{"id", {"sales.orders.id IDENTITY"}},
                    {"customer", {"sales.orders.customer IDENTITY"}},
                    {"amount", {"sales.orders.amount IDENTITY"}},
                    {"region", {"sales.customers.country TRANSFORMATION"}},
                    {"*", {"sales.customers.id JOIN", "sales.orders.customer JOIN", "sales.customers.name FILTER"}}}));
}

TEST_F(SqlLineageTest, FilesReadByReadParquetAreFileDatasets) {
  const std::string file = tmp_.Path("in.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT 7 AS k, 'x' AS v) TO " + engine::QuoteString(file) + " (FORMAT parquet)").ok());
  // skade_read_parquet (read_parquet with deletes applied) reads files the same way.
  for (const std::string function : {"read_parquet", "skade_read_parquet"}) {
    SCOPED_TRACE(function);
    const int64_t head = Head();
    ASSERT_EQ(Sql("CREATE TABLE imported_" + function + " AS SELECT k * 10 AS k10, v FROM " + function + "(" +
                  engine::QuoteString(file) + ")"),
              1);
    const Json complete = CompleteOf(EventsSince(head, "files.jsonl"), "append:sales.imported_" + function);
    ASSERT_EQ(complete["inputs"].size(), 1u) << complete.dump();
    EXPECT_EQ(complete["inputs"][0]["namespace"], "file");
    EXPECT_EQ(complete["inputs"][0]["name"], file);
    EXPECT_EQ(ColumnLineage(complete), (Fields{{"k10", {"in.parquet.k TRANSFORMATION"}}, {"v", {"in.parquet.v IDENTITY"}}}));
  }
}

// The same through the `skade sql` binary, events as `skade lineage show` prints them; a
// DELETE names the tables its condition reads.
TEST_F(SqlLineageTest, TheSqlCommandRecordsTheSameLineage) {
  Cli("sql " + ShellQuote("CREATE TABLE sales.eu_orders (id BIGINT, who VARCHAR)"));
  Cli("sql " + ShellQuote("INSERT INTO sales.eu_orders SELECT o.id, c.name FROM sales.orders o "
                          "JOIN sales.customers c ON c.id = o.customer WHERE o.region = 'eu'"));
  Cli("sql " + ShellQuote("DELETE FROM sales.orders WHERE customer IN (SELECT id FROM sales.customers "
                          "WHERE country = 'US')"));
  std::vector<Json> events;
  std::string lines;
  for (const char* table : {"sales.eu_orders", "sales.orders"}) {
    for (const std::string& line : testing::Lines(Cli(std::string("lineage show ") + table))) {
      lines += line + "\n";
      events.push_back(Json::parse(line));
    }
  }
  testing::WriteFileOrDie(tmp_.Path("cli.jsonl"), lines);
  EXPECT_EQ(ValidatePinned(tmp_.Path("cli.jsonl"), static_cast<int>(events.size())), "");
  const Json insert = CompleteOf(events, "append:sales.eu_orders");
  EXPECT_EQ(ColumnLineage(insert),
            (Fields{{"id", {"sales.orders.id IDENTITY"}},
                    {"who", {"sales.customers.name IDENTITY"}},
                    {"*", {"sales.orders.customer JOIN", "sales.customers.id JOIN", "sales.orders.region FILTER"}}}));
  const Json removal = CompleteOf(events, "delete:sales.orders");
  ASSERT_TRUE(removal.is_object());
  std::set<std::string> names;
  for (const Json& in : removal["inputs"]) names.insert(in["name"]);
  EXPECT_THAT(names, UnorderedElementsAre("sales.customers", "sales.orders"));
  EXPECT_EQ(ColumnLineage(removal),
            (Fields{{"*", {"sales.orders.customer FILTER", "sales.customers.id FILTER", "sales.customers.country FILTER"}}}));
}

// What a snapshot records round-trips, and what older writers recorded still reads.
TEST(SnapshotLineageTest, RoundTripsTransformationsFilesAndDatasetLineage) {
  table::SnapshotLineage l;
  l.inputs.push_back({*catalog::TableIdent::Parse("a.src"), 42, ""});
  l.inputs.push_back({catalog::TableIdent{}, std::nullopt, "s3://bucket/in/*.parquet"});
  l.columns["x"] = {{0, "y", {{"DIRECT", "IDENTITY", false}}}, {1, "k", {{"DIRECT", "TRANSFORMATION", true}}}};
  l.columns["z"] = {{0, "w", {}}};
  l.dataset = {{0, "y", {{"INDIRECT", "JOIN", false}, {"INDIRECT", "FILTER", false}}}};
  const std::string encoded = table::EncodeSnapshotLineage(l);
  auto decoded = table::DecodeSnapshotLineage(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, l) << encoded;
  auto older = table::DecodeSnapshotLineage(R"({"inputs":[{"table":"a.src","snapshot-id":1}],"columns":{"x":[[0,"y"]]}})");
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_TRUE(older->columns["x"][0].transformations.empty());
  EXPECT_TRUE(older->dataset.empty());
  for (const char* bad : {R"({"inputs":[{"table":"a.b"}],"columns":{"x":[[0,"y",[["SIDEWAYS","JOIN"]]]]}})",
                          R"({"inputs":[{"table":"a.b"}],"dataset":[[1,"y"]]})",
                          R"({"inputs":[{"location":""}]})"}) {
    EXPECT_EQ(table::DecodeSnapshotLineage(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace skade::lineage
