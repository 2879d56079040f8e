// Statements executed the way ADBC's DB-API execute() executes every statement: as a query
// (CreatePreparedStatement, DoPut of the parameters, GetFlightInfo, DoGet). The FlightInfo
// announces the schema the stream then has, parameters bound; and a write statement runs once,
// commits, and answers its count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

using testing::Client;
using testing::Encode;
using testing::FlightServerTest;
using testing::View;
using ::testing::ElementsAre;
namespace pb = testing::pb;
namespace pbsql = testing::pbsql;

// The formats and names of a schema's columns ("l v").
std::vector<std::string> Columns(const ArrowSchema& schema) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < schema.n_children; ++i) {
    out.push_back(std::string(schema.children[i]->format) + " " + schema.children[i]->name);
  }
  return out;
}

Result<arrow::SchemaHandle> Decode(const std::string& ipc_schema) {
  SKADE_ASSIGN_OR_RETURN(auto reader, arrow::ipc::StreamReader::Open(ipc_schema));
  return reader->ExportSchema();
}

// Value `row` of the BIGINT column `column` of `batch`.
int64_t Int64At(const ArrowArray& batch, int column, int64_t row) {
  const ArrowArray& c = *batch.children[column];
  return static_cast<const int64_t*>(c.buffers[1])[c.offset + row];
}

// What a client reads for a prepared query with one row of parameters bound: the FlightInfo's
// schema and the stream.
struct Executed {
  arrow::SchemaHandle announced;  // unset when the FlightInfo has no schema
  Client::Fetched fetched;
};

Result<Executed> ExecutePrepared(Client& client, const std::string& sql, const testing::EncodedBatch& params) {
  SKADE_ASSIGN_OR_RETURN(auto prepared, client.CreatePrepared(sql));
  SKADE_RETURN_IF_ERROR(client.BindPrepared(prepared.prepared_statement_handle(), View(params)));
  pbsql::CommandPreparedStatementQuery command;
  command.set_prepared_statement_handle(prepared.prepared_statement_handle());
  SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, client.InfoFor(command));
  Executed out;
  SKADE_ASSIGN_OR_RETURN(out.fetched, client.Get(info.endpoint(0).ticket()));
  // GetSchema of the bound statement says the same as its FlightInfo.
  SKADE_ASSIGN_OR_RETURN(std::string schema, client.SchemaFor(command));
  if (schema != info.schema()) return Status::Internal("GetSchema and GetFlightInfo differ");
  if (!info.schema().empty()) {
    SKADE_ASSIGN_OR_RETURN(out.announced, Decode(info.schema()));
  }
  return out;
}

// One parameter row: a BIGINT 5 and a NULL.
testing::EncodedBatch FiveAndNull() {
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("1", "l", true);
  columns.emplace_back("2", "l", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendInt(5);
  b.child(1).AppendNull();
  return Encode(std::move(b));
}

// DuckDB types these result columns only once the parameters are bound (before, it answers one
// column "unknown" of the null type, or INTEGER for coalesce(?, 1)); the FlightInfo of the
// bound statement announces what the stream has, exactly (ADBC refuses the result otherwise).
TEST_F(FlightServerTest, APreparedQueryAnnouncesTheSchemaOfItsBoundParameters) {
  StartServer();
  Client good(server_->port(), "good");
  auto executed = ExecutePrepared(good, "SELECT ? AS v, ? IS NULL AS n", FiveAndNull());
  ASSERT_TRUE(executed.ok()) << executed.status().ToString();
  EXPECT_THAT(Columns(*executed->announced.get()), ElementsAre("l v", "b n"));
  EXPECT_EQ(arrow::SchemaKey(*executed->announced.get()), arrow::SchemaKey(*executed->fetched.schema.get()));
  ASSERT_EQ(executed->fetched.batches.size(), 1u);
  EXPECT_EQ(Int64At(*executed->fetched.batches[0].get(), 0, 0), 5);

  for (const char* sql : {"SELECT coalesce(?, 1) AS c, ? AS d",
                          "SELECT x, ? AS tag FROM skade.db.target WHERE ? IS NULL", "SELECT ? + 1 AS a, [?] AS b"}) {
    SCOPED_TRACE(sql);
    auto got = ExecutePrepared(good, sql, FiveAndNull());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(arrow::SchemaKey(*got->announced.get()), arrow::SchemaKey(*got->fetched.schema.get()));
    EXPECT_FALSE(Columns(*got->announced.get()).empty());
  }
  auto coalesced = ExecutePrepared(good, "SELECT coalesce(?, 1) AS c", [] {
    std::vector<arrow::ArrayBuilder> columns;
    columns.emplace_back("1", "l", true);
    auto b = arrow::RecordBatchBuilder(std::move(columns));
    b.AppendStruct();
    b.child(0).AppendInt(int64_t{1} << 40);
    return Encode(std::move(b));
  }());
  ASSERT_TRUE(coalesced.ok()) << coalesced.status().ToString();
  EXPECT_THAT(Columns(*coalesced->announced.get()), ElementsAre("l c"));
  EXPECT_EQ(Int64At(*coalesced->fetched.batches[0].get(), 0, 0), int64_t{1} << 40);
}

// A statement the server cannot describe with its parameters (DESCRIBE does not take EXPLAIN)
// gets a FlightInfo without a schema rather than the wrong one: clients take the stream's.
TEST_F(FlightServerTest, AnExplainWithParametersAnnouncesNoWrongSchema) {
  StartServer();
  Client good(server_->port(), "good");
  auto got = ExecutePrepared(good, "EXPLAIN SELECT ? AS v, ? IS NULL AS n", FiveAndNull());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  if (got->announced.valid()) {
    EXPECT_EQ(arrow::SchemaKey(*got->announced.get()), arrow::SchemaKey(*got->fetched.schema.get()));
  }
  EXPECT_THAT(Columns(*got->fetched.schema.get()), ElementsAre("u explain_key", "u explain_value"));
}

// The FlightInfo of a write statement sent as a query: the one BIGINT column "Count", the
// affected rows as total_records, and a ticket.
void ExpectWriteInfo(const pb::FlightInfo& info, int64_t changed) {
  EXPECT_EQ(info.total_records(), changed);
  ASSERT_EQ(info.endpoint_size(), 1);
  auto schema = Decode(info.schema());
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_THAT(Columns(*schema->get()), ElementsAre("l Count"));
}

// Its stream: the same schema and one row holding the count.
void ExpectCount(Client& client, const pb::FlightInfo& info, int64_t changed) {
  auto fetched = client.Get(info.endpoint(0).ticket());
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  auto announced = Decode(info.schema());
  ASSERT_TRUE(announced.ok());
  EXPECT_EQ(arrow::SchemaKey(*fetched->schema.get()), arrow::SchemaKey(*announced->get()));
  ASSERT_EQ(fetched->batches.size(), 1u);
  ASSERT_EQ(fetched->batches[0]->length, 1);
  EXPECT_EQ(Int64At(*fetched->batches[0].get(), 0, 0), changed);
}

// INSERT/UPDATE/DELETE prepared and executed as a query, with and without parameters: the write
// runs at GetFlightInfo, once, and commits; fetching the result (again, and again) runs nothing.
TEST_F(FlightServerTest, APreparedWriteExecutedAsAQueryRunsOnceAndAnswersItsCount) {
  StartServer();
  Client good(server_->port(), "good");
  auto insert = good.CreatePrepared("INSERT INTO skade.db.target VALUES (?), (?)");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  EXPECT_TRUE(insert->dataset_schema().empty());  // an update, to clients that ask (JDBC)
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("1", "l", true);
  columns.emplace_back("2", "l", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendInt(8);
  b.child(1).AppendInt(9);
  ASSERT_TRUE(good.BindPrepared(insert->prepared_statement_handle(), View(Encode(std::move(b)))).ok());
  EXPECT_EQ(Count("target"), "5");  // binding runs nothing

  pbsql::CommandPreparedStatementQuery command;
  command.set_prepared_statement_handle(insert->prepared_statement_handle());
  auto schema = good.SchemaFor(command);  // GetSchema runs nothing either
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ(Count("target"), "5");

  auto info = good.InfoFor(command);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(Count("target"), "7");
  ExpectWriteInfo(*info, 2);
  EXPECT_EQ(*schema, info->schema());
  for (int fetch = 0; fetch < 3; ++fetch) ExpectCount(good, *info, 2);
  EXPECT_EQ(Count("target"), "7");
  // Only its user may fetch it.
  Client stall(server_->port(), "stall");
  EXPECT_FALSE(stall.Get(info->endpoint(0).ticket()).ok());
  EXPECT_EQ(stall.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);

  auto remove = good.CreatePrepared("DELETE FROM skade.db.target WHERE x = 7");
  ASSERT_TRUE(remove.ok()) << remove.status().ToString();
  pbsql::CommandPreparedStatementQuery remove_command;
  remove_command.set_prepared_statement_handle(remove->prepared_statement_handle());
  auto removed = good.InfoFor(remove_command);  // no parameters: no DoPut
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  ExpectWriteInfo(*removed, 5);
  ExpectCount(good, *removed, 5);
  EXPECT_EQ(Count("target"), "2");
  // The prepared statement's own ticket would run it again: refused.
  pb::Ticket again;
  again.set_ticket(Client::Descriptor(remove_command).cmd());
  EXPECT_FALSE(good.Get(again).ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::INVALID_ARGUMENT);

  // A write with parameters needs them bound first.
  auto update = good.CreatePrepared("UPDATE skade.db.target SET x = ? WHERE x = 8");
  ASSERT_TRUE(update.ok()) << update.status().ToString();
  pbsql::CommandPreparedStatementQuery update_command;
  update_command.set_prepared_statement_handle(update->prepared_statement_handle());
  EXPECT_FALSE(good.InfoFor(update_command).ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Count("target"), "2");
}

// CommandStatementQuery holding a write: the same, without a prepared statement.
TEST_F(FlightServerTest, AWriteSentAsAStatementQueryRunsOnceAndAnswersItsCount) {
  StartServer();
  Client good(server_->port(), "good");
  pbsql::CommandStatementQuery insert;
  insert.set_query("INSERT INTO skade.db.target SELECT range FROM range(3)");
  auto schema = good.SchemaFor(insert);
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ(Count("target"), "5");
  auto info = good.InfoFor(insert);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(Count("target"), "8");
  ExpectWriteInfo(*info, 3);
  EXPECT_EQ(*schema, info->schema());
  ExpectCount(good, *info, 3);
  ExpectCount(good, *info, 3);
  EXPECT_EQ(Count("target"), "8");

  // Cancelling a write that already committed cancels nothing; its result stays readable.
  pb::Action cancel;
  cancel.set_type("CancelFlightInfo");
  pb::CancelFlightInfoRequest request;
  *request.mutable_info() = *info;
  cancel.set_body(request.SerializeAsString());
  auto cancelled = good.DoActionResult(cancel);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  pb::CancelFlightInfoResult result;
  ASSERT_TRUE(result.ParseFromString(*cancelled));
  EXPECT_EQ(result.status(), pb::CANCEL_STATUS_NOT_CANCELLABLE);
  ExpectCount(good, *info, 3);

  auto failed = good.InfoFor([] {
    pbsql::CommandStatementQuery q;
    q.set_query("DELETE FROM skade.db.target WHERE no_such_column = 1");
    return q;
  }());
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(Count("target"), "8");
}

TEST_F(FlightServerTest, AReadOnlyServerRefusesWritesSentAsQueries) {
  StartServer([](ServerOptions& o) { o.read_only = true; });
  Client good(server_->port(), "good");
  pbsql::CommandStatementQuery insert;
  insert.set_query("INSERT INTO skade.db.target VALUES (1)");
  EXPECT_FALSE(good.InfoFor(insert).ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(good.SchemaFor(insert).ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(good.CreatePrepared("INSERT INTO skade.db.target VALUES (1)").ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Count("target"), "5");
}

}  // namespace
}  // namespace skade::flightsql
