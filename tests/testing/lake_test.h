// A test fixture with a real lake: a SQLite catalog and warehouse in a temp folder, DuckDB, and
// one namespace; helpers to create tables from DuckDB column definitions and to query rows.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "skade/catalog/sql_catalog.h"
#include "skade/engine/schema_convert.h"
#include "skade/table/table.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/temp_dir.h"

namespace skade::testing {

class LakeTest : public ::testing::Test {
 protected:
  explicit LakeTest(std::string ns = "db") : ns_(std::move(ns)) {}

  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    catalog::SqlCatalogOptions o;
    o.uri = "sqlite://" + tmp_.Path("catalog.db");
    o.warehouse = tmp_.Path("warehouse");
    auto cat = catalog::OpenSqlCatalog(o, *io_);
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
    ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse(ns_), {}).ok());
  }

  catalog::TableIdent Ident(const std::string& name) const {
    return *catalog::TableIdent::Parse(ns_ + "." + name);
  }

  // Creates <ns>.<name> from DuckDB column definitions, a partition spec in text form, table
  // properties and identifier field ids; returns it loaded.
  std::unique_ptr<table::Table> CreateTable(const std::string& name, const std::string& columns,
                                            const std::string& partition_by = "",
                                            std::map<std::string, std::string> properties = {},
                                            std::vector<int> identifier_field_ids = {}) {
    auto schema = engine::SchemaFromColumnDefinitions(columns);
    EXPECT_TRUE(schema.ok()) << schema.status().ToString();
    if (!schema.ok()) return nullptr;
    iceberg::SchemaPtr s = *schema;
    if (!identifier_field_ids.empty()) {
      s = std::make_shared<const iceberg::Schema>(s->schema_id(), s->fields(), identifier_field_ids);
    }
    auto spec = iceberg::ParsePartitionSpec(partition_by, *s, 0);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (!spec.ok()) return nullptr;
    catalog::CreateTableRequest req;
    req.schema = s;
    req.spec = *spec;
    req.properties = std::move(properties);
    auto created = catalog_->CreateTable(Ident(name), req);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return LoadTable(Ident(name));
  }

  std::unique_ptr<table::Table> LoadTable(const catalog::TableIdent& ident) {
    auto t = table::Table::Load(*catalog_, *io_, *db_, ident);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  // Runs `query` with `relation_sql` visible as `t`; values as text, NULL as "NULL".
  std::vector<std::vector<std::string>> Query(const std::string& relation_sql, const std::string& query) {
    return QueryText(*db_, "WITH t AS (" + relation_sql + ") " + query);
  }

  // `query` over the table's rows (current snapshot unless `options` say otherwise).
  std::vector<std::vector<std::string>> Rows(table::Table& t, const std::string& query,
                                             table::ReadOptions options = {}) {
    auto sql = t.ReadSql(options);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? Query(*sql, query) : std::vector<std::vector<std::string>>{};
  }

  TempDir tmp_;
  std::string ns_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<engine::Database> db_;
  std::unique_ptr<catalog::Catalog> catalog_;
};

}  // namespace skade::testing
