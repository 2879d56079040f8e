// Over Flight SQL, information_schema and SHOW TABLES list every table of the lake (not only
// those queried since the server started), and AT (…) reads past snapshots. The key commands
// (GetPrimaryKeys from Iceberg identifier fields; GetImportedKeys, GetExportedKeys and
// GetCrossReference empty) answer the spec's schemas, and TYPE_NAME spells ENUM and UNION
// columns in full.
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

namespace pbsql = testing::pbsql;
using testing::Client;
using ::testing::ElementsAre;
using testing::FlightServerTest;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The columns of a schema as "name format" ("?" after the format when nullable).
std::vector<std::string> Columns(const ArrowSchema& schema) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < schema.n_children; ++i) {
    const ArrowSchema& c = *schema.children[i];
    out.push_back(std::string(c.name) + " " + c.format + ((c.flags & ARROW_FLAG_NULLABLE) ? "?" : ""));
  }
  return out;
}

// The rows of the batches as "a|b|…" (NULL for a null); utf8, int32 and uint8 columns only.
std::vector<std::string> RowsOf(const Client::Fetched& fetched) {
  std::vector<std::string> out;
  const ArrowSchema& schema = *fetched.schema.get();
  for (const auto& batch : fetched.batches) {
    for (int64_t row = 0; row < batch->length; ++row) {
      std::string line;
      for (int64_t c = 0; c < schema.n_children; ++c) {
        const ArrowArray& a = *batch->children[c];
        const std::string_view format = schema.children[c]->format;
        const int64_t i = a.offset + row;
        const auto* validity = static_cast<const uint8_t*>(a.buffers[0]);
        std::string cell = "NULL";
        if (validity == nullptr || ((validity[i / 8] >> (i % 8)) & 1)) {
          if (format == "u") {
            const auto* offsets = static_cast<const int32_t*>(a.buffers[1]);
            cell.assign(static_cast<const char*>(a.buffers[2]) + offsets[i], offsets[i + 1] - offsets[i]);
          } else if (format == "i") {
            cell = std::to_string(static_cast<const int32_t*>(a.buffers[1])[i]);
          } else if (format == "C") {
            cell = std::to_string(static_cast<const uint8_t*>(a.buffers[1])[i]);
          } else {
            cell = "?" + std::string(format);
          }
        }
        line += (c == 0 ? "" : "|") + cell;
      }
      out.push_back(line);
    }
  }
  return out;
}

// The ARROW:FLIGHT:SQL:TYPE_NAME of each column of `schema`.
std::vector<std::string> TypeNames(const ArrowSchema& schema) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < schema.n_children; ++i) {
    auto kv = arrow::DecodeMetadata(schema.children[i]->metadata);
    std::string name = "(none)";
    if (kv.ok()) {
      for (const auto& [k, v] : *kv) {
        if (k == "ARROW:FLIGHT:SQL:TYPE_NAME") name = v;
      }
    }
    out.push_back(name);
  }
  return out;
}

iceberg::NestedField Field(int id, std::string name, bool required, iceberg::TypePtr type) {
  return iceberg::NestedField{id, std::move(name), required, std::move(type), "", std::nullopt, std::nullopt};
}

// A lake with keys: sales.eu.orders keyed by (line, order_id) in that order, sales.eu.shipments
// by id and the nested dest.country, db.orders by k; db.target has no identifier fields.
class KeysTest : public FlightServerTest {
 protected:
  void SetUp() override {
    FlightServerTest::SetUp();
    if (HasFatalFailure()) return;
    using iceberg::Type;
    using iceberg::TypeId;
    ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("sales.eu"), {}).ok());
    Create("sales.eu.orders", iceberg::Schema(0,
                                              {Field(1, "order_id", true, Type::Primitive(TypeId::kLong)),
                                               Field(2, "line", true, Type::Primitive(TypeId::kInt)),
                                               Field(3, "note", false, Type::Primitive(TypeId::kString))},
                                              {2, 1}));
    auto dest = Type::Struct({Field(3, "country", true, Type::Primitive(TypeId::kString)),
                              Field(4, "city", false, Type::Primitive(TypeId::kString))});
    Create("sales.eu.shipments",
           iceberg::Schema(0, {Field(1, "id", true, Type::Primitive(TypeId::kLong)), Field(2, "dest", true, dest)},
                           {1, 3}));
    ASSERT_NE(CreateTable("orders", "k BIGINT NOT NULL", "", {}, {1}), nullptr);
    StartServer();
  }

  void Create(const std::string& ident, iceberg::Schema schema) {
    catalog::CreateTableRequest req;
    req.schema = std::make_shared<const iceberg::Schema>(std::move(schema));
    auto created = catalog_->CreateTable(*catalog::TableIdent::Parse(ident), req);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  // GetPrimaryKeys of `table`, in `db_schema` and `catalog` when given, as RowsOf; the schema
  // announced and streamed checked against the spec's.
  std::vector<std::string> PrimaryKeys(const std::string& table, std::optional<std::string> db_schema,
                                       std::optional<std::string> catalog = std::nullopt) {
    pbsql::CommandGetPrimaryKeys cmd;
    cmd.set_table(table);
    if (db_schema) cmd.set_db_schema(*db_schema);
    if (catalog) cmd.set_catalog(*catalog);
    Client good(server_->port(), "good");
    arrow::SchemaHandle announced;
    auto fetched = good.Metadata(cmd, &announced);
    EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
    if (!fetched.ok()) return {"failed"};
    const std::vector<std::string> spec = {"catalog_name u?", "db_schema_name u?", "table_name u",
                                           "column_name u",   "key_name u?",       "key_sequence i"};
    EXPECT_EQ(Columns(*announced.get()), spec);
    EXPECT_EQ(Columns(*fetched->schema.get()), spec);
    return RowsOf(*fetched);
  }
};

TEST_F(KeysTest, PrimaryKeysAreTheIdentifierFieldsInTheirOrder) {
  EXPECT_THAT(PrimaryKeys("orders", "sales.eu", "skade"),
              ElementsAre("skade|sales.eu|orders|line|NULL|1", "skade|sales.eu|orders|order_id|NULL|2"));
  // A field inside a struct is named by its dotted path.
  EXPECT_THAT(PrimaryKeys("shipments", "sales.eu"),
              ElementsAre("skade|sales.eu|shipments|id|NULL|1", "skade|sales.eu|shipments|dest.country|NULL|2"));
  // Without a db_schema every namespace's table of that name answers, in namespace order.
  EXPECT_THAT(PrimaryKeys("orders", std::nullopt),
              ElementsAre("skade|db|orders|k|NULL|1", "skade|sales.eu|orders|line|NULL|1",
                          "skade|sales.eu|orders|order_id|NULL|2"));
}

TEST_F(KeysTest, ATableWithoutIdentifierFieldsOrUnknownHasNoPrimaryKey) {
  EXPECT_THAT(PrimaryKeys("target", "db"), IsEmpty());
  // Unknown tables find nothing (as JDBC's getPrimaryKeys answers), whatever part is unknown.
  EXPECT_THAT(PrimaryKeys("nope", "sales.eu"), IsEmpty());
  EXPECT_THAT(PrimaryKeys("nope", std::nullopt), IsEmpty());
  EXPECT_THAT(PrimaryKeys("orders", "sales.us"), IsEmpty());
  EXPECT_THAT(PrimaryKeys("orders", "sales"), IsEmpty());
  EXPECT_THAT(PrimaryKeys("orders", "sales.eu", "other"), IsEmpty());
  EXPECT_THAT(PrimaryKeys("orders", "sales.eu", ""), IsEmpty());  // "" = tables without a catalog
  EXPECT_THAT(PrimaryKeys("orders", ""), IsEmpty());              // "" = tables without a schema
  EXPECT_THAT(PrimaryKeys("a/b", "sales.eu"), IsEmpty());         // a name no table can have
  EXPECT_THAT(PrimaryKeys("", std::nullopt), IsEmpty());
}

TEST_F(KeysTest, ForeignKeyCommandsAnswerAnEmptyResultOfTheSpecsSchema) {
  const std::vector<std::string> spec = {
      "pk_catalog_name u?", "pk_db_schema_name u?", "pk_table_name u", "pk_column_name u", "fk_catalog_name u?",
      "fk_db_schema_name u?", "fk_table_name u", "fk_column_name u", "key_sequence i", "fk_key_name u?",
      "pk_key_name u?", "update_rule C", "delete_rule C"};
  pbsql::CommandGetImportedKeys imported;
  imported.set_db_schema("sales.eu");
  imported.set_table("orders");
  pbsql::CommandGetExportedKeys exported;
  exported.set_db_schema("sales.eu");
  exported.set_table("orders");
  pbsql::CommandGetCrossReference cross;
  cross.set_pk_db_schema("sales.eu");
  cross.set_pk_table("orders");
  cross.set_fk_db_schema("sales.eu");
  cross.set_fk_table("shipments");
  Client good(server_->port(), "good");
  for (const google::protobuf::Message* cmd : std::initializer_list<const google::protobuf::Message*>{
           &imported, &exported, &cross}) {
    SCOPED_TRACE(cmd->GetTypeName());
    arrow::SchemaHandle announced;
    auto fetched = good.Metadata(*cmd, &announced);
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    EXPECT_EQ(Columns(*announced.get()), spec);
    EXPECT_EQ(Columns(*fetched->schema.get()), spec);
    EXPECT_THAT(RowsOf(*fetched), IsEmpty());
    // GetSchema answers the same schema.
    auto bytes = good.SchemaFor(*cmd);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto reader = arrow::ipc::StreamReader::Open(*bytes);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    auto schema = (*reader)->ExportSchema();
    ASSERT_TRUE(schema.ok()) << schema.status().ToString();
    EXPECT_EQ(Columns(*schema->get()), spec);
  }
}

// The dataset schema of a prepared statement of `sql`, decoded.
Result<arrow::SchemaHandle> PreparedSchema(Client& client, const std::string& sql) {
  SKADE_ASSIGN_OR_RETURN(auto prepared, client.CreatePrepared(sql));
  SKADE_ASSIGN_OR_RETURN(auto reader, arrow::ipc::StreamReader::Open(prepared.dataset_schema()));
  return reader->ExportSchema();
}

// TYPE_NAME of an ENUM result column is its full SQL type, in the FlightInfo's schema, the
// stream's and a prepared statement's.
TEST_F(FlightServerTest, TypeNameOfAnEnumIsItsFullType) {
  StartServer();
  Client good(server_->port(), "good");
  const std::string sql = "SELECT 'b'::ENUM('a', 'b') AS e, 'it''s'::ENUM('it''s', 'x') AS q, 1 AS i";
  const std::vector<std::string> expected = {"ENUM('a', 'b')", "ENUM('it''s', 'x')", "INTEGER"};
  auto schemas = good.Schemas(sql);
  ASSERT_TRUE(schemas.ok()) << schemas.status().ToString();
  EXPECT_EQ(TypeNames(*schemas->first.get()), expected);
  EXPECT_EQ(TypeNames(*schemas->second.get()), expected);
  auto prepared = PreparedSchema(good, sql);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  EXPECT_EQ(TypeNames(*prepared->get()), expected);
  // The rows still arrive, as a dictionary.
  auto values = good.Strings("SELECT CAST(e AS VARCHAR) FROM (" + sql + ")");
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_THAT(*values, ElementsAre("b"));
  auto rows = good.Rows(sql);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, 1);

  // An ENUM too long to spell, or of a statement DuckDB cannot describe (it has parameters),
  // is "ENUM": its members are only in the data.
  std::string members;
  for (int i = 0; i < 1000; ++i) members += (i == 0 ? "'v" : ", 'v") + std::to_string(i) + "'";
  auto big = good.Schemas("SELECT 'v1'::ENUM(" + members + ") AS e");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_THAT(TypeNames(*big->first.get()), ElementsAre("ENUM"));
  EXPECT_THAT(TypeNames(*big->second.get()), ElementsAre("ENUM"));
  auto with_parameter = PreparedSchema(good, "SELECT 'b'::ENUM('a', 'b') AS e WHERE ?::INTEGER > 0");
  ASSERT_TRUE(with_parameter.ok()) << with_parameter.status().ToString();
  EXPECT_THAT(TypeNames(*with_parameter->get()), ElementsAre("ENUM"));
}

// TYPE_NAME of a UNION result column is its full SQL type as DuckDB spells it, in the
// FlightInfo's schema, the stream's and a prepared statement's. (skade's IPC reader does not
// decode unions: the schemas are searched as bytes, where metadata values are verbatim.)
TEST_F(FlightServerTest, TypeNameOfAUnionIsItsFullType) {
  StartServer();
  Client good(server_->port(), "good");
  const std::string sql =
      "SELECT union_value(num := 7)::UNION(num INTEGER, str VARCHAR) AS u, "
      "union_value(\"select\" := 1)::UNION(\"select\" INTEGER, \"Mixed Case\" VARCHAR) AS q";
  const std::string u = "UNION(num INTEGER, str VARCHAR)";
  const std::string q = "UNION(\"select\" INTEGER, \"Mixed Case\" VARCHAR)";
  auto bytes = good.SchemaBytes(sql);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  for (const std::string& schema : {bytes->first, bytes->second}) {
    EXPECT_THAT(schema, HasSubstr(u));
    EXPECT_THAT(schema, HasSubstr(q));
  }
  auto prepared = good.CreatePrepared(sql);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  EXPECT_THAT(prepared->dataset_schema(), HasSubstr(u));
  EXPECT_THAT(prepared->dataset_schema(), HasSubstr(q));
  // Where DuckDB cannot describe the statement (it has parameters), the name is spelled from
  // the Arrow members: only names that are not plain identifiers are quoted.
  auto with_parameter = good.CreatePrepared(sql + " WHERE ?::INTEGER > 0");
  ASSERT_TRUE(with_parameter.ok()) << with_parameter.status().ToString();
  EXPECT_THAT(with_parameter->dataset_schema(), HasSubstr(u));
  EXPECT_THAT(with_parameter->dataset_schema(), HasSubstr("UNION(select INTEGER, \"Mixed Case\" VARCHAR)"));
}

TEST_F(FlightServerTest, InformationSchemaListsEveryTableOfTheLake) {
  ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("sales.eu"), {}).ok());
  catalog::CreateTableRequest req;
  auto schema = engine::SchemaFromColumnDefinitions("id BIGINT, amount DOUBLE NOT NULL");
  ASSERT_TRUE(schema.ok());
  req.schema = *schema;
  ASSERT_TRUE(catalog_->CreateTable(*catalog::TableIdent::Parse("sales.eu.orders"), req).ok());
  StartServer();
  Client good(server_->port(), "good");
  // No table has been queried through this server.
  auto tables = good.Strings(
      "SELECT table_schema || '.' || table_name || ' ' || table_type FROM "
      "information_schema.tables "
      "WHERE table_catalog = 'skade' ORDER BY ALL");
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  EXPECT_THAT(*tables, ElementsAre("db.big BASE TABLE", "db.target BASE TABLE",
                                   "sales.eu.orders BASE TABLE"));
  auto columns = good.Strings(
      "SELECT table_schema || '.' || table_name || '.' || column_name || ' ' || data_type || ' ' "
      "|| is_nullable "
      "FROM information_schema.columns WHERE table_catalog = 'skade' ORDER BY table_schema, "
      "table_name, ordinal_position");
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  EXPECT_THAT(*columns,
              ElementsAre("db.big.id BIGINT NO", "db.big.s VARCHAR YES", "db.target.x BIGINT YES",
                          "sales.eu.orders.id BIGINT YES", "sales.eu.orders.amount DOUBLE NO"));
  // SHOW TABLES lists the session schema's tables; DESCRIBE shows NOT NULL.
  ASSERT_TRUE(good.SetSchema("db").ok());
  auto shown = good.Strings("SHOW TABLES");
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  EXPECT_THAT(*shown, ElementsAre("big", "target"));
  auto described =
      good.Strings("SELECT column_name || ' ' || \"null\" FROM (DESCRIBE \"sales.eu\".orders)");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  EXPECT_THAT(*described, ElementsAre("id YES", "amount NO"));
  // A typo names the lake's table.
  auto typo = good.Rows("SELECT * FROM targte");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(typo.status().message(), HasSubstr("did you mean db.target?"));
}

// Views of the catalog: GetTables lists them as VIEW (alone when asked for), with their schema;
// GetTableTypes names both types; queries read them, and CREATE VIEW over Flight SQL makes one.
TEST_F(FlightServerTest, ViewsAreListedAndRead) {
  catalog::CreateViewRequest view;
  auto schema = engine::SchemaFromColumnDefinitions("id BIGINT NOT NULL, doubled BIGINT");
  ASSERT_TRUE(schema.ok());
  view.schema = *schema;
  view.version.representations.push_back(iceberg::ViewRepresentation{"SELECT id, id * 2 FROM big", "spark"});
  view.version.default_namespace = {"db"};
  ASSERT_TRUE(catalog_->CreateView(*catalog::TableIdent::Parse("db.twice"), view).ok());
  StartServer();
  Client good(server_->port(), "good");
  auto list = [&](std::vector<std::string> types, bool include_schema) {
    pbsql::CommandGetTables cmd;
    for (const auto& t : types) cmd.add_table_types(t);
    cmd.set_include_schema(include_schema);
    arrow::SchemaHandle announced;
    auto fetched = good.Metadata(cmd, &announced);
    EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
    return fetched;
  };
  auto all = list({}, false);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(RowsOf(*all), ElementsAre("skade|db|big|TABLE", "skade|db|target|TABLE", "skade|db|twice|VIEW"));
  auto views = list({"VIEW"}, true);
  ASSERT_TRUE(views.ok());
  ASSERT_EQ(views->batches.size(), 1u);
  ASSERT_EQ(views->batches[0]->length, 1);
  const ArrowArray& bytes = *views->batches[0]->children[4];
  const auto* offsets = static_cast<const int32_t*>(bytes.buffers[1]);
  std::string message(static_cast<const char*>(bytes.buffers[2]) + offsets[0], offsets[1] - offsets[0]);
  auto reader = arrow::ipc::StreamReader::Open(message);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto view_schema = (*reader)->ExportSchema();
  ASSERT_TRUE(view_schema.ok());
  EXPECT_THAT(Columns(*view_schema->get()), ElementsAre("id l", "doubled l?"));
  EXPECT_THAT(RowsOf(*list({"TABLE"}, false)), ElementsAre("skade|db|big|TABLE", "skade|db|target|TABLE"));
  pbsql::CommandGetTableTypes types;
  arrow::SchemaHandle announced;
  auto type_rows = good.Metadata(types, &announced);
  ASSERT_TRUE(type_rows.ok());
  EXPECT_THAT(RowsOf(*type_rows), ElementsAre("TABLE", "VIEW"));
  // Read through its Spark SQL; made and dropped by SQL over Flight SQL.
  auto read = good.Strings("SELECT count(*) FILTER (WHERE doubled = 2 * id)::VARCHAR FROM db.twice");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  auto total = good.Strings("SELECT count(*)::VARCHAR FROM db.big");
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*read, *total);
  ASSERT_TRUE(good.Update("CREATE VIEW db.few AS SELECT id FROM db.big WHERE id < 3").ok());
  EXPECT_TRUE(catalog_->LoadView(*catalog::TableIdent::Parse("db.few")).ok());
  ASSERT_TRUE(good.Update("DROP VIEW db.few").ok());
  EXPECT_EQ(catalog_->LoadView(*catalog::TableIdent::Parse("db.few")).status().code(), StatusCode::kNotFound);
}

// GetTables' schemas come from a cache keyed by table name and metadata file: a renamed table
// (same file) carries its new name in each column's TABLE_NAME, a table whose schema changed
// shows its new column, and a dropped one is gone, on the same server.
TEST_F(FlightServerTest, TableSchemasFollowRenamesAndSchemaChanges) {
  StartServer();
  Client good(server_->port(), "good");
  // table name -> "TABLE_NAME of every column|column names", for the tables of schema db.
  auto schemas = [&]() {
    std::map<std::string, std::string> out;
    pbsql::CommandGetTables cmd;
    cmd.set_db_schema_filter_pattern("db");
    cmd.add_table_types("TABLE");
    cmd.set_include_schema(true);
    arrow::SchemaHandle announced;
    auto fetched = good.Metadata(cmd, &announced);
    EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
    if (!fetched.ok()) return out;
    for (const auto& batch : fetched->batches) {
      const auto* name_offsets = static_cast<const int32_t*>(batch->children[2]->buffers[1]);
      const auto* names = static_cast<const char*>(batch->children[2]->buffers[2]);
      const auto* offsets = static_cast<const int32_t*>(batch->children[4]->buffers[1]);
      const auto* bytes = static_cast<const char*>(batch->children[4]->buffers[2]);
      for (int64_t row = 0; row < batch->length; ++row) {
        std::string name(names + name_offsets[row], name_offsets[row + 1] - name_offsets[row]);
        auto reader = arrow::ipc::StreamReader::Open(std::string(bytes + offsets[row], offsets[row + 1] - offsets[row]));
        EXPECT_TRUE(reader.ok()) << reader.status().ToString();
        if (!reader.ok()) continue;
        auto schema = (*reader)->ExportSchema();
        EXPECT_TRUE(schema.ok());
        if (!schema.ok()) continue;
        std::set<std::string> table_names;
        std::string columns;
        for (int64_t i = 0; i < (*schema)->n_children; ++i) {
          const ArrowSchema& c = *(*schema)->children[i];
          columns += std::string(i ? "," : "") + c.name;
          auto kv = arrow::DecodeMetadata(c.metadata);
          if (!kv.ok()) continue;
          for (const auto& [k, v] : *kv) {
            if (k == "ARROW:FLIGHT:SQL:TABLE_NAME") table_names.insert(v);
          }
        }
        std::string label;
        for (const auto& t : table_names) label += (label.empty() ? "" : "+") + t;
        out[name] = label + "|" + columns;
      }
    }
    return out;
  };
  auto before = schemas();
  ASSERT_EQ(before.count("target"), 1u);
  const std::string target_columns = before["target"].substr(before["target"].find('|'));
  EXPECT_EQ(before["target"], "target" + target_columns);
  ASSERT_TRUE(catalog_->RenameTable(Ident("target"), Ident("moved")).ok());
  auto renamed = schemas();
  EXPECT_EQ(renamed.count("target"), 0u);
  EXPECT_EQ(renamed["moved"], "moved" + target_columns);
  auto moved = LoadTable(Ident("moved"));
  ASSERT_TRUE(moved);
  table::SchemaChange add;
  add.column = "note";
  add.type = "VARCHAR";
  auto altered = moved->UpdateSchema({add});
  ASSERT_TRUE(altered.ok()) << altered.status().ToString();
  EXPECT_EQ(schemas()["moved"], "moved" + target_columns + ",note");
  ASSERT_TRUE(good.Update("DROP TABLE db.moved").ok());
  EXPECT_EQ(schemas().count("moved"), 0u);
  EXPECT_EQ(schemas().count("big"), 1u);
}

TEST_F(FlightServerTest, AtReadsPastSnapshots) {
  auto target = LoadTable(Ident("target"));
  ASSERT_TRUE(target);
  const int64_t first = target->metadata().current_snapshot_id.value_or(0);
  ASSERT_TRUE(target->Append({"SELECT 8 AS x FROM range(3)", nullptr}).ok());
  auto third = target->Append({"SELECT 9 AS x FROM range(4)", nullptr});
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(target->Refresh().ok());
  ASSERT_TRUE(target->CreateTag("five", first).ok());
  StartServer();
  Client good(server_->port(), "good");
  auto count = [&](const std::string& at) -> std::string {
    auto rows = good.Strings(
        "SELECT CAST(count(*) AS VARCHAR) || '/' || CAST(max(x) AS VARCHAR) FROM skade.db.target " +
        at);
    return rows.ok() && rows->size() == 1 ? (*rows)[0] : rows.status().ToString();
  };
  EXPECT_EQ(count(""), "12/9");
  EXPECT_EQ(count("AT (VERSION => " + std::to_string(first) + ")"), "5/7");
  EXPECT_EQ(count("AT (VERSION => 'five')"), "5/7");
  EXPECT_EQ(count("AT (VERSION => " + std::to_string(third->snapshot_id) + ")"), "12/9");
  const int64_t first_ms = target->metadata().SnapshotById(first)->timestamp_ms;
  EXPECT_EQ(count("AT (TIMESTAMP => epoch_ms(" + std::to_string(first_ms) + "))"), "5/7");
  // An unknown snapshot is an error, never the current snapshot.
  auto unknown = good.Rows("SELECT * FROM skade.db.target AT (VERSION => 4242)");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
  auto early = good.Rows("SELECT * FROM skade.db.target AT (TIMESTAMP => TIMESTAMP '2000-01-01')");
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace skade::flightsql
