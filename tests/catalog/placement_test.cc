// Table placement on a real SQLite catalog: no table's location is equal to, inside or around
// another table's location or a namespace's folder, whatever the names (DESIGN §11).
#include "skade/catalog/placement.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>
#include <vector>

#include "skade/catalog/sql_catalog.h"
#include "skade/iceberg/schema.h"
#include "skade/io/file_io.h"
#include "skade/io/location.h"
#include "tests/testing/schemas.h"
#include "tests/testing/temp_dir.h"

namespace skade::catalog {
namespace {

iceberg::SchemaPtr OneColumn() { return testing::SchemaOf({{1, "id", iceberg::TypeId::kLong}}); }

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    warehouse_ = dir_.Path("warehouse");
    SqlCatalogOptions o;
    o.uri = "sqlite://" + dir_.Path("catalog.db");
    o.warehouse = warehouse_;
    catalog_ = std::move(OpenSqlCatalog(o, *io_)).value();
  }

  // Creates `dotted` (namespace made first) and returns its location.
  std::string Create(const std::string& dotted) {
    auto ident = TableIdent::Parse(dotted);
    EXPECT_TRUE(ident.ok()) << dotted;
    if (!*catalog_->NamespaceExists(ident->ns)) {
      EXPECT_TRUE(catalog_->CreateNamespace(ident->ns, {}).ok());
    }
    CreateTableRequest req;
    req.schema = OneColumn();
    auto created = catalog_->CreateTable(*ident, req);
    EXPECT_TRUE(created.ok()) << dotted << ": " << created.status().ToString();
    return created.ok() ? created->table.metadata->location : "";
  }

  // No two tables overlap. (A namespace created after a table of the same name has that
  // table's folder as its natural folder; no table is ever placed there.)
  void ExpectDisjoint() {
    auto tables = catalog_->ListTableLocations();
    ASSERT_TRUE(tables.ok()) << tables.status().ToString();
    for (size_t i = 0; i < tables->size(); ++i) {
      for (size_t j = i + 1; j < tables->size(); ++j) {
        EXPECT_FALSE(io::Overlaps((*tables)[i].location, (*tables)[j].location))
            << (*tables)[i].ident.ToString() << " at " << (*tables)[i].location << " and "
            << (*tables)[j].ident.ToString() << " at " << (*tables)[j].location;
      }
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<io::FileIO> io_;
  std::string warehouse_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(PlacementTest, NaturalLocationWhenFree) {
  EXPECT_EQ(Create("sales.orders"), warehouse_ + "/sales/orders");
  EXPECT_EQ(Create("a.b.c.t"), warehouse_ + "/a/b/c/t");
  ExpectDisjoint();
}

TEST_F(PlacementTest, TableAndNamespaceOfOneNameNeverShareAFolder) {
  // Table sales.eu first, then namespace sales.eu with tables named like a table's folders.
  std::string eu = Create("sales.eu");
  EXPECT_EQ(eu, warehouse_ + "/sales/eu");
  for (const char* t : {"sales.eu.t", "sales.eu.data", "sales.eu.metadata"}) {
    std::string location = Create(t);
    EXPECT_FALSE(io::Overlaps(location, eu)) << t << " at " << location;
  }
  // And the other way round: namespace first, then the table of that name.
  ASSERT_TRUE(catalog_->CreateNamespace(*Namespace::Parse("x.y"), {}).ok());
  std::string xy = Create("x.y");
  EXPECT_NE(xy, warehouse_ + "/x/y");
  // A namespace nested below the natural folder counts too (parents need not exist).
  ASSERT_TRUE(catalog_->CreateNamespace(*Namespace::Parse("p.q.r"), {}).ok());
  EXPECT_NE(Create("p.q"), warehouse_ + "/p/q");
  ExpectDisjoint();
}

TEST_F(PlacementTest, NamesDifferingInCaseGetDifferentFolders) {
  std::string upper = Create("s.Orders");
  std::string lower = Create("s.orders");
  EXPECT_EQ(upper, warehouse_ + "/s/Orders");
  EXPECT_FALSE(io::Overlaps(upper, lower)) << lower;
  ExpectDisjoint();
}

TEST_F(PlacementTest, LeftoverFilesOfADroppedTableAreNotReused) {
  std::string first = Create("s.t");
  ASSERT_TRUE(catalog_->DropTable(*TableIdent::Parse("s.t"), DropMode::kKeepFiles).ok());
  std::string second = Create("s.t");
  EXPECT_NE(second, first);
  EXPECT_FALSE(io::Overlaps(first, second));
}

TEST_F(PlacementTest, GivenOrRegisteredLocationsMustBeFree) {
  std::string t = Create("s.t");
  CreateTableRequest req;
  req.schema = OneColumn();
  for (const std::string& location : {t, t + "/data/inner", warehouse_ + "/s", warehouse_, warehouse_ + "/S/T"}) {
    req.location = location;
    EXPECT_EQ(catalog_->CreateTable(*TableIdent::Parse("s.given"), req).status().code(), StatusCode::kInvalidArgument)
        << location;
  }
  req.location = dir_.Path("elsewhere/given");
  EXPECT_TRUE(catalog_->CreateTable(*TableIdent::Parse("s.given"), req).ok());
  // Registering the metadata of s.t under another name would put two tables in one folder.
  auto state = catalog_->LoadTable(*TableIdent::Parse("s.t"));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(catalog_->RegisterTable(*TableIdent::Parse("s.copy"), state->metadata_location).status().code(),
            StatusCode::kInvalidArgument);
  ExpectDisjoint();
}

TEST_F(PlacementTest, TablesWrittenByAnotherProgramAreIndexedWhenSeen) {
  std::string t = Create("s.t");
  // Another JDBC-catalog writer (PyIceberg, Java) adds rows to iceberg_tables but not to
  // skade's index: drop the index rows to play that writer.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.Path("catalog.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM skade_table_locations", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto tables = catalog_->ListTableLocations();
  ASSERT_TRUE(tables.ok());
  ASSERT_EQ(tables->size(), 1u);
  EXPECT_EQ((*tables)[0].location, t);
  CreateTableRequest req;
  req.schema = OneColumn();
  req.location = t + "/nested";
  EXPECT_EQ(catalog_->CreateTable(*TableIdent::Parse("s.nested"), req).status().code(), StatusCode::kInvalidArgument);
}

TEST(PlacementInputsTest, CheckNamesTheOverlap) {
  PlacementInputs inputs;
  inputs.warehouse = "/w";
  inputs.tables = {{*TableIdent::Parse("a.t"), "/w/a/t"}};
  inputs.namespaces = {*Namespace::Parse("a"), *Namespace::Parse("b.c")};
  TableIdent self = *TableIdent::Parse("z.z");
  EXPECT_TRUE(CheckLocationFree(inputs, self, "/w/a/u").ok());
  EXPECT_TRUE(CheckLocationFree(inputs, self, "/w/a/t2").ok());
  EXPECT_EQ(CheckLocationFree(inputs, self, "/w/a/t").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLocationFree(inputs, self, "file:///w/a/t/").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLocationFree(inputs, self, "/w/a/t/x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLocationFree(inputs, self, "/w/a").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLocationFree(inputs, self, "/w/b").code(), StatusCode::kInvalidArgument);  // holds b.c's folder
  EXPECT_EQ(CheckLocationFree(inputs, self, "/w/B/C").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckLocationFree(inputs, *TableIdent::Parse("a.t"), "/w/a/t").ok());  // itself
}

TEST(LocationTest, NormalFormsCompare) {
  EXPECT_EQ(io::NormalizeLocation("file:///a/./b//c/"), "/a/b/c");
  EXPECT_EQ(io::NormalizeLocation("file:/a/b"), "/a/b");
  EXPECT_EQ(io::NormalizeLocation("file://localhost/a/b"), "/a/b");
  EXPECT_EQ(io::NormalizeLocation("/a/b/../c"), "/a/c");
  EXPECT_EQ(io::NormalizeLocation("s3a://bucket/k//x/"), "s3://bucket/k/x");
  EXPECT_EQ(io::NormalizeLocation("S3N://bucket/k"), "s3://bucket/k");
  EXPECT_EQ(io::NormalizeLocation("hdfs://nn:8020/w/t"), "hdfs://nn:8020/w/t");
  EXPECT_EQ(io::NormalizeLocation("/"), "/");
  EXPECT_TRUE(io::IsWithin("/w/a/b", "/w/a"));
  EXPECT_TRUE(io::IsWithin("/w/a", "file:///w/a/"));
  EXPECT_FALSE(io::IsWithin("/w/ab", "/w/a"));
  EXPECT_FALSE(io::IsWithin("/w/A/b", "/w/a"));
  EXPECT_TRUE(io::IsWithinIgnoringCase("/w/A/b", "/w/a"));
  EXPECT_TRUE(io::Overlaps("/w/a", "/w/a/b"));
  EXPECT_TRUE(io::Overlaps("/w/a/b", "/w/a"));
  EXPECT_FALSE(io::Overlaps("/w/a", "/w/b"));
  EXPECT_TRUE(io::IsWithin("s3://b/w/t/data/f", "s3a://b/w/t"));
  EXPECT_FALSE(io::IsWithin("s3://c/w/t", "s3://b/w/t"));
}

}  // namespace
}  // namespace skade::catalog
