// Writes a Flight SQL client sends record where their rows came from (issue 38): the snapshot an
// INSERT … SELECT, a MERGE or an UPDATE … FROM commits names the tables it read, at the snapshots
// read, and per written column the input columns with OpenLineage's transformation types — what
// the OpenLineage emitter turns into inputs and the columnLineage facet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "skade/table/snapshot_lineage.h"
#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

using testing::Client;
using testing::FlightServerTest;
using ::testing::ElementsAre;
using Lineage = std::map<std::string, std::set<std::string>>;

class WriteLineageTest : public FlightServerTest {
 protected:
  void SetUp() override {
    FlightServerTest::SetUp();
    ASSERT_NE(CreateTable("labels", "k BIGINT, label VARCHAR"), nullptr);
    ASSERT_NE(CreateTable("kv", "k BIGINT, v VARCHAR"), nullptr);
  }

  // The lineage the table's current snapshot records: its inputs ("db.t@<snapshot>", sorted) and
  // per column "t.field SUBTYPE" (the dataset-wide ones under "*").
  std::pair<std::vector<std::string>, Lineage> Recorded(const std::string& table) {
    auto t = LoadTable(Ident(table));
    EXPECT_NE(t, nullptr);
    if (t == nullptr || t->metadata().CurrentSnapshot() == nullptr) return {};
    auto lineage = table::SnapshotLineageOf(*t->metadata().CurrentSnapshot());
    EXPECT_TRUE(lineage.ok() && lineage->has_value()) << table;
    if (!lineage.ok() || !lineage->has_value()) return {};
    const table::SnapshotLineage& l = **lineage;
    std::vector<std::string> inputs;
    for (const table::LineageInput& in : l.inputs) {
      inputs.push_back(in.table.ToString() + "@" + (in.snapshot_id ? std::to_string(*in.snapshot_id) : "-"));
    }
    std::sort(inputs.begin(), inputs.end());
    Lineage columns;
    auto add = [&](const table::LineageField& f, std::set<std::string>& into) {
      for (const table::LineageTransformation& t : f.transformations) {
        into.insert(l.inputs[f.input].table.name + "." + f.field + " " + t.subtype);
      }
    };
    for (const auto& [column, fields] : l.columns) {
      for (const table::LineageField& f : fields) add(f, columns[column]);
    }
    for (const table::LineageField& f : l.dataset) add(f, columns["*"]);
    return {inputs, columns};
  }

  std::string At(const std::string& table) {
    auto t = LoadTable(Ident(table));
    return "db." + table + "@" + std::to_string(t ? t->CurrentSnapshotId().value_or(-1) : -1);
  }
};

TEST_F(WriteLineageTest, InsertSelectMergeAndUpdateFromRecordTheirInputsAndColumns) {
  StartServer();
  Client good(server_->port(), "good");
  ASSERT_EQ(*good.Update("INSERT INTO skade.db.labels VALUES (7, 'seven'), (8, 'eight')"), 2);

  ASSERT_EQ(*good.Update("INSERT INTO skade.db.kv SELECT t.x, l.label FROM skade.db.target t "
                         "JOIN skade.db.labels l ON l.k = t.x"),
            5);
  auto [inputs, columns] = Recorded("kv");
  EXPECT_THAT(inputs, ElementsAre(At("labels"), At("target")));
  EXPECT_EQ(columns, (Lineage{{"k", {"target.x IDENTITY"}},
                              {"v", {"labels.label IDENTITY"}},
                              {"*", {"target.x JOIN", "labels.k JOIN"}}}));

  const std::string kv_before = At("kv");
  ASSERT_EQ(*good.Update("MERGE INTO skade.db.kv AS d USING skade.db.labels AS l ON d.k = l.k "
                         "WHEN MATCHED THEN UPDATE SET v = upper(l.label) "
                         "WHEN NOT MATCHED THEN INSERT VALUES (l.k, l.label)"),
            6);
  std::tie(inputs, columns) = Recorded("kv");
  EXPECT_THAT(inputs, ElementsAre(kv_before, At("labels")));
  EXPECT_EQ(columns, (Lineage{{"k", {"kv.k IDENTITY", "labels.k IDENTITY"}},
                              {"v", {"labels.label TRANSFORMATION", "labels.label IDENTITY"}},
                              {"*", {"kv.k JOIN", "labels.k JOIN", "kv.k FILTER", "labels.k FILTER"}}}));
  EXPECT_EQ(Count("kv"), "6");

  ASSERT_EQ(*good.Update("UPDATE skade.db.kv AS d SET v = l.label || '!' FROM skade.db.labels l "
                         "WHERE l.k = d.k AND l.k = 8"),
            1);
  std::tie(inputs, columns) = Recorded("kv");
  EXPECT_EQ(columns, (Lineage{{"k", {"kv.k IDENTITY"}},
                              {"v", {"labels.label TRANSFORMATION"}},
                              {"*", {"labels.k JOIN", "kv.k JOIN", "labels.k FILTER"}}}));
  EXPECT_THAT(*good.Strings("SELECT v FROM skade.db.kv WHERE k = 8"), ElementsAre("eight!"));
}

}  // namespace
}  // namespace skade::flightsql
