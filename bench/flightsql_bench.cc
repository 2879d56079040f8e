// flightsql_bench: the Arrow Flight SQL server (issue 5, "Benchmarks") in one process and one run.
//  1. DoGet throughput of `SELECT * FROM skade."ns".t` (10M rows × 10 columns by default) over
//     loopback, measured by a C++ gRPC client (grpc::GenericStub, raw ByteBuffers, FlightData
//     parsed by hand, batches decoded with arrow::ipc::MessageDecoder), against two servers on
//     the same lake: zero-copy body slices and copy_batches, cookie-less (as ADBC, pyarrow and
//     Arrow C++ call) and with a session cookie (as JDBC). Baselines in the same run: DuckDB
//     alone in process (its own DuckDB, the Parquet files given, its own chunk-by-chunk Arrow
//     stream), and skade in process running the same view SQL (Database::QueryArrow), every
//     batch drained.
//  1b. First rows: a 1M-row, 4-column result, time to its first batch and to its last, through
//     Flight SQL, from skade in process, and from DuckDB alone (issue 36, item 2).
//  2. Metadata latency: GetTables (GetFlightInfo + DoGet) over 1,000 small tables, with
//     include_schema cold (new server) and warm (schema cache filled) and without, p50/p99;
//     in process for comparison: catalog list + load of each table (+ its Arrow schema).
//  3. Many clients: 64 clients running a small query in a loop (queries/s, p50/p99), and one
//     client's small query alone vs beside 100 DoGets that never read (p50 ratio, RSS, threads).
//   flightsql_bench [--dir LAKE] [--rows 10000000] [--repeat 3] [--tables 1000] [--calls 50]
//                   [--clients 64] [--seconds 30] [--stalled 100] [--skip-doget|metadata|concurrency]
#include <google/protobuf/any.pb.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/table_generator.h"
#include "duckdb.h"
#include "flight.pb.h"
#include "flight_sql.pb.h"
#include "skade/arrow/ipc.h"
#include "skade/base/base64.h"
#include "skade/cli/lake.h"
#include "skade/engine/database.h"
#include "skade/flightsql/auth.h"
#include "skade/flightsql/server.h"
#include "skade/sql/lake_sql.h"

namespace skade::bench {
namespace {

namespace pb = ::arrow::flight::protocol;
namespace pbsql = ::arrow::flight::protocol::sql;
namespace fs = std::filesystem;

constexpr const char* kGetFlightInfo = "/arrow.flight.protocol.FlightService/GetFlightInfo";
constexpr const char* kDoGet = "/arrow.flight.protocol.FlightService/DoGet";
constexpr const char* kDoAction = "/arrow.flight.protocol.FlightService/DoAction";
constexpr const char* kCatalogName = "skade";
constexpr std::chrono::seconds kCallTimeout{600};
constexpr const char* kVariantNames[] = {"baseline", "zero-copy", "copy", "cookie", "duckdb"};

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// Nearest-rank percentile (p in (0, 100]) of unsorted values.
double Best(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::min_element(values.begin(), values.end());
}

// ---- FlightData on the wire (protobuf): data_header = field 2, data_body = field 1000

bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t byte = *p++;
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

struct FlightDataView {
  std::string_view header;
  std::string_view body;
};

// Finds data_header and data_body in one serialized FlightData, without copying; other fields
// (flight_descriptor, app_metadata, unknown ones) are skipped by wire type.
Result<FlightDataView> ParseFlightData(std::string_view bytes) {
  FlightDataView out;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* end = p + bytes.size();
  while (p < end) {
    uint64_t tag = 0;
    if (!ReadVarint(p, end, &tag)) return Status::Corruption("FlightData: bad tag");
    uint64_t field = tag >> 3;
    uint64_t value = 0;
    switch (tag & 7) {
      case 0:
        if (!ReadVarint(p, end, &value)) return Status::Corruption("FlightData: bad varint");
        break;
      case 1:
        if (end - p < 8) return Status::Corruption("FlightData: truncated fixed64");
        p += 8;
        break;
      case 5:
        if (end - p < 4) return Status::Corruption("FlightData: truncated fixed32");
        p += 4;
        break;
      case 2: {
        if (!ReadVarint(p, end, &value) || value > static_cast<uint64_t>(end - p)) {
          return Status::Corruption("FlightData: bad length of field " + std::to_string(field));
        }
        std::string_view bytes_field(reinterpret_cast<const char*>(p), static_cast<size_t>(value));
        if (field == 2) out.header = bytes_field;
        if (field == 1000) out.body = bytes_field;
        p += value;
        break;
      }
      default:
        return Status::Corruption("FlightData: unsupported wire type");
    }
  }
  return out;
}

grpc::ByteBuffer ToByteBuffer(const google::protobuf::Message& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

std::string PackCommand(const google::protobuf::Message& command) {
  google::protobuf::Any any;
  any.PackFrom(command);
  return any.SerializeAsString();
}

Status FromGrpc(const grpc::Status& st, const std::string& what) {
  if (st.ok()) return Status::Ok();
  return Status::Internal(what + ": gRPC code " + std::to_string(st.error_code()) + ": " +
                          st.error_message());
}

// What one DoGet delivered.
struct DoGetStats {
  int64_t messages = 0;
  int64_t batches = 0;
  int64_t rows = 0;
  int64_t body_bytes = 0;    // sum of FlightData.data_body sizes (the IPC bodies)
  int64_t header_bytes = 0;  // sum of FlightData.data_header sizes
  int64_t flattened = 0;     // messages that arrived in several slices and were made contiguous
  double flatten_seconds = 0;
  double decode_seconds = 0;
  double first_batch_at = 0;  // NowSeconds() when the first record batch was decoded (0: none)
};

// A Flight SQL client over grpc::GenericStub: protobuf messages in raw ByteBuffers, one
// completion queue driven by this thread, the server's session cookie carried between calls.
// Not thread-safe.
class FlightClient {
 public:
  // `authorization`: the header sent on every call ("Basic …"), none when empty.
  explicit FlightClient(int port, std::string authorization = "") : authorization_(std::move(authorization)) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = std::make_unique<grpc::GenericStub>(channel_);
  }
  ~FlightClient() {
    cq_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  // GetFlightInfo for a CMD descriptor holding `command` (a packed Any).
  Result<pb::FlightInfo> GetFlightInfo(const std::string& command) {
    pb::FlightDescriptor descriptor;
    descriptor.set_type(pb::FlightDescriptor::CMD);
    descriptor.set_cmd(command);
    grpc::ClientContext ctx;
    Prepare(ctx);
    grpc::ByteBuffer request = ToByteBuffer(descriptor);
    auto call = stub_->PrepareUnaryCall(&ctx, kGetFlightInfo, request, &cq_);
    call->StartCall();
    grpc::ByteBuffer response;
    grpc::Status status;
    call->Finish(&response, &status, Tag(1));
    SKADE_RETURN_IF_ERROR(Await(1, "GetFlightInfo"));
    SKADE_RETURN_IF_ERROR(FromGrpc(status, "GetFlightInfo"));
    KeepCookie(ctx);
    grpc::Slice bytes;
    if (!response.DumpToSingleSlice(&bytes).ok()) return Status::Internal("GetFlightInfo: no body");
    pb::FlightInfo info;
    if (!info.ParseFromArray(bytes.begin(), static_cast<int>(bytes.size()))) {
      return Status::Corruption("GetFlightInfo: malformed FlightInfo");
    }
    return info;
  }

  // SetSessionOptions (default schema "ns"): the server opens a session and sets its cookie,
  // which every later call sends back (as the JDBC driver does).
  Status OpenSession() {
    pb::SetSessionOptionsRequest request;
    (*request.mutable_session_options())["schema"].set_string_value("ns");
    pb::Action action;
    action.set_type("SetSessionOptions");
    action.set_body(request.SerializeAsString());
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto call = stub_->PrepareCall(&ctx, kDoAction, &cq_);
    call->StartCall(Tag(1));
    SKADE_RETURN_IF_ERROR(Await(1, "DoAction start"));
    call->WriteLast(ToByteBuffer(action), grpc::WriteOptions(), Tag(2));
    SKADE_RETURN_IF_ERROR(Await(2, "DoAction write"));
    while (true) {
      grpc::ByteBuffer result;
      call->Read(&result, Tag(3));
      bool ok = false;
      SKADE_RETURN_IF_ERROR(Await(3, "DoAction read", &ok));
      if (!ok) break;
    }
    grpc::Status status;
    call->Finish(&status, Tag(4));
    SKADE_RETURN_IF_ERROR(Await(4, "DoAction finish"));
    SKADE_RETURN_IF_ERROR(FromGrpc(status, "SetSessionOptions"));
    KeepCookie(ctx);
    if (cookie_.empty()) return Status::Internal("SetSessionOptions set no session cookie");
    return Status::Ok();
  }

  // Starts a DoGet of `ticket` and reads nothing (a client whose reading has stalled): the
  // call stays open until the returned handle is dropped (which cancels it).
  struct OpenCall {
    grpc::ClientContext ctx;
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;
    ~OpenCall() {
      ctx.TryCancel();
      if (call) {
        grpc::Status status;
        call->Finish(&status, Tag(9));
      }
      cq.Shutdown();
      void* tag = nullptr;
      bool ok = false;
      while (cq.Next(&tag, &ok)) {
      }
    }
  };
  std::unique_ptr<OpenCall> StartStalledDoGet(const pb::Ticket& ticket) {
    auto open = std::make_unique<OpenCall>();
    Prepare(open->ctx);
    open->call = stub_->PrepareCall(&open->ctx, kDoGet, &open->cq);
    open->call->StartCall(Tag(1));
    void* tag = nullptr;
    bool ok = false;
    open->cq.Next(&tag, &ok);
    open->call->WriteLast(ToByteBuffer(ticket), grpc::WriteOptions(), Tag(2));
    open->cq.Next(&tag, &ok);
    return open;
  }

  // DoGet of `ticket`: reads every FlightData, decodes each IPC message and drops the batches.
  Result<DoGetStats> DoGet(const pb::Ticket& ticket) {
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto call = stub_->PrepareCall(&ctx, kDoGet, &cq_);
    call->StartCall(Tag(1));
    SKADE_RETURN_IF_ERROR(Await(1, "DoGet start"));
    grpc::ByteBuffer request = ToByteBuffer(ticket);
    call->WriteLast(request, grpc::WriteOptions(), Tag(2));
    SKADE_RETURN_IF_ERROR(Await(2, "DoGet write"));
    DoGetStats stats;
    arrow::ipc::MessageDecoder decoder;
    std::string flat;
    Status failure = Status::Ok();
    while (true) {
      grpc::ByteBuffer message;
      call->Read(&message, Tag(3));
      bool ok = false;
      SKADE_RETURN_IF_ERROR(Await(3, "DoGet read", &ok));
      // Not ok: the end of the stream (or an error, which Finish reports). After a failure the
      // rest is drained so that Finish can complete.
      if (!ok) break;
      if (!failure.ok()) continue;
      failure = Consume(message, decoder, stats, flat);
    }
    grpc::Status status;
    call->Finish(&status, Tag(4));
    SKADE_RETURN_IF_ERROR(Await(4, "DoGet finish"));
    SKADE_RETURN_IF_ERROR(FromGrpc(status, "DoGet"));
    SKADE_RETURN_IF_ERROR(failure);
    if (!decoder.has_schema()) return Status::Corruption("DoGet: the stream had no schema");
    return stats;
  }

 private:
  static void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }

  void Prepare(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    if (!cookie_.empty()) ctx.AddMetadata("cookie", cookie_);
    if (!authorization_.empty()) ctx.AddMetadata("authorization", authorization_);
  }

  // The session the server opened on the first call ("arrow_flight_session_id=…").
  void KeepCookie(const grpc::ClientContext& ctx) {
    const auto& md = ctx.GetServerInitialMetadata();
    auto it = md.find("set-cookie");
    if (it == md.end()) return;
    std::string value(it->second.data(), it->second.size());
    cookie_ = value.substr(0, value.find(';'));
  }

  // Waits for the completion of `expected` (calls carry deadlines, so this ends).
  Status Await(intptr_t expected, const char* what, bool* ok_out = nullptr) {
    void* tag = nullptr;
    bool ok = false;
    if (!cq_.Next(&tag, &ok)) return Status::Internal(std::string(what) + ": queue shut down");
    if (tag != Tag(expected)) {
      return Status::Internal(std::string(what) + ": unexpected completion");
    }
    if (ok_out != nullptr) {
      *ok_out = ok;
    } else if (!ok) {
      return Status::Unavailable(std::string(what) + " failed");
    }
    return Status::Ok();
  }

  static Status Consume(const grpc::ByteBuffer& message, arrow::ipc::MessageDecoder& decoder,
                        DoGetStats& stats, std::string& flat) {
    ++stats.messages;
    // The body must be contiguous for the decoder: gRPC hands a large message over in several
    // slices, which are then copied into one (as Arrow's own Flight client does), here into one
    // buffer reused from message to message (the decoder copies what it keeps). A fresh
    // malloc per 1 MiB message made glibc map and trim its heap each time: section am of
    // RESULTS.md measured that page-fault churn as a third of the Flight run's CPU, a cost of
    // this client that Arrow's pooled allocators (jemalloc, mimalloc) do not pay.
    grpc::Slice slice;
    std::string_view bytes;
    if (message.TrySingleSlice(&slice).ok()) {
      bytes = std::string_view(reinterpret_cast<const char*>(slice.begin()), slice.size());
    } else {
      double start = NowSeconds();
      std::vector<grpc::Slice> slices;
      if (!message.Dump(&slices).ok()) return Status::Internal("empty FlightData");
      flat.resize(message.Length());
      size_t at = 0;
      for (const grpc::Slice& s : slices) {
        std::memcpy(flat.data() + at, s.begin(), s.size());
        at += s.size();
      }
      bytes = std::string_view(flat.data(), flat.size());
      stats.flatten_seconds += NowSeconds() - start;
      ++stats.flattened;
    }
    SKADE_ASSIGN_OR_RETURN(FlightDataView view, ParseFlightData(bytes));
    if (view.header.empty()) return Status::Ok();  // app_metadata only
    stats.header_bytes += static_cast<int64_t>(view.header.size());
    stats.body_bytes += static_cast<int64_t>(view.body.size());
    double start = NowSeconds();
    SKADE_ASSIGN_OR_RETURN(std::optional<arrow::ArrayHandle> batch,
                           decoder.Decode(view.header, view.body));
    stats.decode_seconds += NowSeconds() - start;
    if (batch) {
      if (stats.batches++ == 0) stats.first_batch_at = NowSeconds();
      stats.rows += (*batch)->length;
    }
    return Status::Ok();
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> stub_;
  grpc::CompletionQueue cq_;
  std::string cookie_;
  std::string authorization_;
};

// One Flight SQL query from the client's side: GetFlightInfo, then DoGet of its only endpoint.
struct QueryRun {
  double first_batch_seconds = 0;  // from the start to the first record batch in hand
  double seconds = 0;        // GetFlightInfo + DoGet
  double doget_seconds = 0;  // DoGet alone
  double cpu_seconds = 0;    // process CPU time (all threads) during the run
  DoGetStats stats;
};

Result<QueryRun> RunFlightCommand(FlightClient& client, const std::string& command) {
  QueryRun run;
  double cpu_start = ProcessCpuSeconds();
  double start = NowSeconds();
  SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, client.GetFlightInfo(command));
  if (info.endpoint_size() != 1) {
    return Status::Internal("expected one endpoint, got " + std::to_string(info.endpoint_size()));
  }
  double doget_start = NowSeconds();
  SKADE_ASSIGN_OR_RETURN(run.stats, client.DoGet(info.endpoint(0).ticket()));
  double end = NowSeconds();
  run.seconds = end - start;
  run.doget_seconds = end - doget_start;
  if (run.stats.first_batch_at > 0) run.first_batch_seconds = run.stats.first_batch_at - start;
  run.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  return run;
}

// The baseline: the same SQL on the same DuckDB, in process, every Arrow batch drained. The
// view sync the server does per statement is included.
Result<QueryRun> RunBaseline(sql::LakeSql& lake, const std::string& sql) {
  QueryRun run;
  double cpu_start = ProcessCpuSeconds();
  double start = NowSeconds();
  SKADE_RETURN_IF_ERROR(lake.SyncViews(sql, ""));
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, lake.db().QueryArrow(sql));
  double first_batch_at = 0;
  SKADE_ASSIGN_OR_RETURN(run.stats.rows, DrainStream(stream, &first_batch_at));
  run.seconds = NowSeconds() - start;
  if (first_batch_at > 0) run.first_batch_seconds = first_batch_at - start;
  run.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  return run;
}

// DuckDB alone, in process: a DuckDB of its own (C API, default threads) reads the table's
// Parquet files, the file list given (no catalog, no metadata, no plan), and streams the rows
// as Arrow the way DuckDB's own clients do: one chunk at a time, each converted by
// duckdb_data_chunk_to_arrow. The baseline skade's answers are measured against (skade's own
// in-process stream converts in DuckDB's worker threads since RESULTS ar).
class DuckDbAlone {
 public:
  // The Parquet files below `table_dir`.
  static Result<std::unique_ptr<DuckDbAlone>> Open(const std::string& table_dir) {
    auto alone = std::unique_ptr<DuckDbAlone>(new DuckDbAlone());
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(table_dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".parquet") files.push_back(entry.path().string());
    }
    if (files.empty()) return Status::NotFound("no Parquet file below " + table_dir);
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) alone->files_ += (alone->files_.empty() ? "'" : ", '") + f + "'";
    if (duckdb_open(nullptr, &alone->db_) != DuckDBSuccess || duckdb_connect(alone->db_, &alone->con_) != DuckDBSuccess) {
      return Status::Internal("cannot open DuckDB");
    }
    return alone;
  }
  ~DuckDbAlone() {
    if (con_) duckdb_disconnect(&con_);
    if (db_) duckdb_close(&db_);
  }

  const std::string& files() const { return files_; }
  // SELECT `columns` FROM the files [WHERE `where`], every batch drained.
  Result<QueryRun> Run(const std::string& columns, const std::string& where) {
    const std::string sql = "SELECT " + columns + " FROM read_parquet([" + files_ + "])" +
                            (where.empty() ? "" : " WHERE " + where);
    QueryRun run;
    double cpu_start = ProcessCpuSeconds();
    double start = NowSeconds();
    duckdb_prepared_statement stmt = nullptr;
    duckdb_pending_result pending = nullptr;
    duckdb_result result;
    bool have_result = false;
    Status status = [&]() -> Status {
      if (duckdb_prepare(con_, sql.c_str(), &stmt) != DuckDBSuccess) {
        return Status::Internal(std::string("DuckDB alone: ") + duckdb_prepare_error(stmt));
      }
      if (duckdb_pending_prepared_streaming(stmt, &pending) != DuckDBSuccess) {
        return Status::Internal(std::string("DuckDB alone: ") + duckdb_pending_error(pending));
      }
      have_result = true;
      if (duckdb_execute_pending(pending, &result) != DuckDBSuccess) {
        return Status::Internal(std::string("DuckDB alone: ") + duckdb_result_error(&result));
      }
      duckdb_arrow_options options = duckdb_result_get_arrow_options(&result);
      while (true) {
        duckdb_data_chunk chunk = duckdb_fetch_chunk(result);
        if (chunk == nullptr) break;
        ArrowArray array;
        duckdb_error_data error = duckdb_data_chunk_to_arrow(options, chunk, &array);
        duckdb_destroy_data_chunk(&chunk);
        if (error != nullptr) {
          const bool failed = duckdb_error_data_has_error(error);
          std::string message = failed ? duckdb_error_data_message(error) : "";
          duckdb_destroy_error_data(&error);
          if (failed) {
            duckdb_destroy_arrow_options(&options);
            return Status::Internal("DuckDB alone: " + message);
          }
        }
        if (run.stats.rows == 0) run.first_batch_seconds = NowSeconds() - start;
        run.stats.rows += array.length;
        array.release(&array);
      }
      duckdb_destroy_arrow_options(&options);
      const char* error = duckdb_result_error(&result);
      if (error != nullptr && *error != '\0') return Status::Internal(std::string("DuckDB alone: ") + error);
      return Status::Ok();
    }();
    if (have_result) duckdb_destroy_result(&result);
    if (pending) duckdb_destroy_pending(&pending);
    if (stmt) duckdb_destroy_prepare(&stmt);
    SKADE_RETURN_IF_ERROR(status);
    run.seconds = NowSeconds() - start;
    run.cpu_seconds = ProcessCpuSeconds() - cpu_start;
    return run;
  }

 private:
  DuckDbAlone() = default;
  duckdb_database db_ = nullptr;
  duckdb_connection con_ = nullptr;
  std::string files_;
};

// ---- the lake

struct Options {
  std::string dir;
  int64_t rows = 10'000'000;
  int files = 10;
  int repeat = 3;
  int tables = 1000;
  int calls = 50;
  bool skip_doget = false;
  bool skip_first_rows = false;
  bool skip_metadata = false;
  bool skip_concurrency = false;
  int clients = 64;          // concurrency: clients running the small query in a loop
  double seconds = 30;       // concurrency: how long they run
  int stalled = 100;         // concurrency: DoGets that never read, opened beside one client
  std::string only;  // DoGet: run just "baseline", "zero-copy" or "copy" (for profiling)
  std::string first_rows_only;  // first rows: run just "duckdb", "skade" or "flight" (for profiling)
};

const catalog::TableIdent& BigTable() {
  static const catalog::TableIdent ident{{{"ns"}}, "t"};
  return ident;
}

const catalog::TableIdent& SmallTable() {
  static const catalog::TableIdent ident{{{"ns"}}, "small"};
  return ident;
}

std::string MetaTableName(int k) {
  std::string digits = std::to_string(k);
  return "t" + std::string(digits.size() < 4 ? 4 - digits.size() : 0, '0') + digits;
}

Status EnsureNamespace(catalog::Catalog& catalog, const catalog::Namespace& ns) {
  SKADE_ASSIGN_OR_RETURN(bool exists, catalog.NamespaceExists(ns));
  if (exists) return Status::Ok();
  return catalog.CreateNamespace(ns, {});
}

// Generates a table of `rows` rows × 10 columns in `files` files below the warehouse (with its
// own, unlocked DuckDB: the lake's is locked down) and registers it, unless the catalog already
// has it.
Status EnsureTable(cli::Lake& lake, const catalog::TableIdent& ident, int64_t rows, int files) {
  auto loaded = lake.catalog->LoadTable(ident);
  if (loaded.ok()) {
    std::cout << "reusing " << ident.ToString() << " (" << loaded->metadata_location << ")\n";
    return Status::Ok();
  }
  if (loaded.status().code() != StatusCode::kNotFound) return loaded.status();
  SKADE_RETURN_IF_ERROR(EnsureNamespace(*lake.catalog, ident.ns));
  double start = NowSeconds();
  GeneratedTable generated;
  {
    SKADE_ASSIGN_OR_RETURN(auto db, engine::Database::Open({}));
    GeneratorOptions g;
    g.out_dir = lake.warehouse + "/ns/" + ident.name;
    g.rows = rows;
    g.columns = 10;
    g.files = files;
    SKADE_ASSIGN_OR_RETURN(generated, GenerateTable(*db, g));
  }
  SKADE_RETURN_IF_ERROR(lake.catalog->RegisterTable(ident, generated.metadata_file));
  std::cout << "generated " << ident.ToString() << ": " << generated.rows << " rows, " << generated.data_files
            << " files, " << generated.data_bytes / 1e6 << " MB in " << NowSeconds() - start << " s\n";
  return Status::Ok();
}

Status EnsureBigTable(cli::Lake& lake, const Options& options) {
  return EnsureTable(lake, BigTable(), options.rows, options.files);
}

// Creates meta.t0000… (5 columns each) through the catalog, skipping those that exist.
Status EnsureMetaTables(cli::Lake& lake, int count) {
  catalog::Namespace ns{{"meta"}};
  SKADE_RETURN_IF_ERROR(EnsureNamespace(*lake.catalog, ns));
  SKADE_ASSIGN_OR_RETURN(auto existing, lake.catalog->ListTables(ns));
  std::vector<std::string> have;
  for (const auto& ident : existing) have.push_back(ident.name);
  std::sort(have.begin(), have.end());
  catalog::CreateTableRequest request;
  request.schema = GeneratedSchema(GeneratedColumns(5, 1000));
  double start = NowSeconds();
  int created = 0;
  for (int k = 0; k < count; ++k) {
    std::string name = MetaTableName(k);
    if (std::binary_search(have.begin(), have.end(), name)) continue;
    SKADE_RETURN_IF_ERROR(lake.catalog->CreateTable({ns, name}, request));
    ++created;
  }
  std::cout << "meta: " << created << " tables created in " << NowSeconds() - start << " s, "
            << have.size() << " reused\n";
  return Status::Ok();
}

// ---- the two benchmarks

Status DoGetBenchmark(sql::LakeSql& lake, DuckDbAlone& alone, const Options& options) {
  flightsql::ServerOptions zero_options;
  zero_options.port = 0;
  flightsql::ServerOptions copy_options = zero_options;
  copy_options.copy_batches = true;
  SKADE_ASSIGN_OR_RETURN(auto zero_server, flightsql::FlightSqlServer::Start(lake, zero_options));
  SKADE_ASSIGN_OR_RETURN(auto copy_server, flightsql::FlightSqlServer::Start(lake, copy_options));
  FlightClient zero_client(zero_server->port());
  FlightClient copy_client(copy_server->port());
  // Cookie-less clients (ADBC, pyarrow, Arrow C++) are the two above; this one echoes a session
  // cookie as the JDBC driver does.
  FlightClient cookie_client(zero_server->port());
  SKADE_RETURN_IF_ERROR(cookie_client.OpenSession());

  const std::string sql = "SELECT * FROM skade.\"ns\".t";
  pbsql::CommandStatementQuery query;
  query.set_query(sql);
  const std::string command = PackCommand(query);

  struct Series {
    std::string name;
    std::vector<double> seconds;
    std::vector<double> doget_seconds;
    std::vector<double> cpu_seconds;
    QueryRun last;
  };
  Series base{"DuckDB in process (baseline)", {}, {}, {}, {}};
  Series zero{"Flight DoGet, zero-copy slices", {}, {}, {}, {}};
  Series copy{"Flight DoGet, copy_batches", {}, {}, {}, {}};
  Series cookie{"Flight DoGet, zero-copy, session cookie", {}, {}, {}, {}};
  Series duck{"DuckDB alone in process (its own Arrow stream)", {}, {}, {}, {}};

  std::cout << "\n== DoGet: " << sql << " (load " << LoadAverage() << ")\n";
  // One warm-up round (page cache, DuckDB, gRPC connections), then rounds whose order rotates
  // so that noise and cache effects spread over all three.
  for (int rep = -1; rep < options.repeat; ++rep) {
    for (int k = 0; k < 5; ++k) {
      int which = (k + std::max(rep, 0)) % 5;
      if (!options.only.empty() && options.only != kVariantNames[which]) continue;
      Result<QueryRun> run = which == 0   ? RunBaseline(lake, sql)
                             : which == 1 ? RunFlightCommand(zero_client, command)
                             : which == 2 ? RunFlightCommand(copy_client, command)
                             : which == 3 ? RunFlightCommand(cookie_client, command)
                                          : alone.Run("*", "");
      if (!run.ok()) return run.status();
      Series& s = which == 0 ? base : which == 1 ? zero : which == 2 ? copy : which == 3 ? cookie : duck;
      if (run->stats.rows != options.rows) {
        return Status::Internal(s.name + ": " + std::to_string(run->stats.rows) +
                                " rows, expected " + std::to_string(options.rows));
      }
      if (rep < 0) continue;
      s.seconds.push_back(run->seconds);
      s.doget_seconds.push_back(run->doget_seconds);
      s.cpu_seconds.push_back(run->cpu_seconds);
      s.last = *run;
      std::cout << "  rep " << rep << " " << s.name << ": " << run->seconds << " s, CPU "
                << run->cpu_seconds << " s";
      if (which != 0 && which != 4) {
        std::cout << " (DoGet " << run->doget_seconds << " s, client flatten "
                  << run->stats.flatten_seconds << " s, decode " << run->stats.decode_seconds
                  << " s)";
      }
      std::cout << "\n";
    }
  }
  if (!options.only.empty()) return Status::Ok();
  const double body_mb = static_cast<double>(zero.last.stats.body_bytes) / 1e6;
  const DoGetStats& z = zero.last.stats;
  std::cout << "stream: " << z.messages << " FlightData messages, " << z.batches << " batches, "
            << z.rows << " rows, IPC bodies " << body_mb << " MB, headers " << z.header_bytes / 1e6
            << " MB; " << z.flattened << " messages arrived in several slices (copied to one)\n";
  std::cout << "(MB/s counts IPC body bytes; the baseline's MB/s is those bytes over its time)\n";
  const double base_median = Median(base.seconds), base_best = Best(base.seconds);
  const double duck_median = Median(duck.seconds);
  for (const Series* s : {&duck, &base, &zero, &copy, &cookie}) {
    double median = Median(s->seconds), best = Best(s->seconds);
    std::cout << s->name << ": median " << median << " s (" << body_mb / median << " MB/s, "
              << static_cast<double>(options.rows) / median / 1e6 << " M rows/s), best " << best
              << " s (" << body_mb / best << " MB/s), CPU median " << Median(s->cpu_seconds)
              << " s";
    if (s != &base && s != &duck) {
      std::cout << ", DoGet alone median " << Median(s->doget_seconds)
                << " s; ratio server/baseline: median " << base_median / median << ", best "
                << base_best / best << "; ratio server/DuckDB alone: median " << duck_median / median;
    }
    if (s == &base) std::cout << "; ratio skade in process/DuckDB alone: median " << duck_median / median;
    std::cout << "\n";
  }
  std::cout << "zero-copy vs copy_batches (median time copy/zero): "
            << Median(copy.seconds) / Median(zero.seconds) << "\n";
  zero_server->Shutdown();
  copy_server->Shutdown();
  return Status::Ok();
}

// `calls` GetTables calls (GetFlightInfo + DoGet, row count checked) on one client.
Result<std::vector<QueryRun>> GetTablesCalls(FlightClient& client, const Options& options,
                                             bool include_schema, int calls) {
  pbsql::CommandGetTables cmd;
  cmd.set_db_schema_filter_pattern("meta");
  cmd.set_include_schema(include_schema);
  const std::string command = PackCommand(cmd);
  std::vector<QueryRun> runs;
  for (int call = 0; call < calls; ++call) {
    SKADE_ASSIGN_OR_RETURN(QueryRun run, RunFlightCommand(client, command));
    if (run.stats.rows != options.tables) {
      return Status::Internal("GetTables returned " + std::to_string(run.stats.rows) + " rows");
    }
    runs.push_back(run);
  }
  return runs;
}

Status MetadataBenchmark(sql::LakeSql& lake, const Options& options) {
  std::cout << "\n== GetTables over " << options.tables << " tables in schema meta, "
            << options.calls << " calls each (load " << LoadAverage() << ")\n";
  auto report = [](const std::string& name, const std::vector<double>& ms) {
    std::cout << name << ": p50 " << Percentile(ms, 50) << " ms, p99 " << Percentile(ms, 99)
              << " ms, max " << Percentile(ms, 100) << " ms, min " << Best(ms) << " ms ("
              << ms.size() << " calls)\n";
  };
  auto millis = [](const std::vector<QueryRun>& runs, bool doget_only) {
    std::vector<double> ms;
    for (const QueryRun& r : runs) ms.push_back((doget_only ? r.doget_seconds : r.seconds) * 1e3);
    return ms;
  };
  flightsql::ServerOptions server_options;
  server_options.port = 0;
  // Cold: the server caches each table's serialized schema by metadata location, so the first
  // call after a start does the full work; each cold sample gets a fresh server (and session).
  std::vector<QueryRun> cold;
  for (int k = 0; k < std::min(options.calls, 10); ++k) {
    SKADE_ASSIGN_OR_RETURN(auto server, flightsql::FlightSqlServer::Start(lake, server_options));
    FlightClient client(server->port());
    SKADE_ASSIGN_OR_RETURN(auto runs, GetTablesCalls(client, options, true, 1));
    cold.push_back(runs[0]);
    server->Shutdown();
  }
  report("GetTables include_schema=true, cold (first call on a new server)", millis(cold, false));
  SKADE_ASSIGN_OR_RETURN(auto server, flightsql::FlightSqlServer::Start(lake, server_options));
  FlightClient client(server->port());
  for (bool include_schema : {true, false}) {
    // One warm-up call, then the measured ones.
    SKADE_RETURN_IF_ERROR(GetTablesCalls(client, options, include_schema, 1));
    SKADE_ASSIGN_OR_RETURN(auto runs,
                           GetTablesCalls(client, options, include_schema, options.calls));
    std::string label =
        include_schema ? "GetTables include_schema=true, warm" : "GetTables include_schema=false";
    report(label + " (GetFlightInfo + DoGet)", millis(runs, false));
    report(label + " (DoGet alone)", millis(runs, true));
  }
  server->Shutdown();
  // In process, no protocol: list the namespace and load every table (what a warm call must
  // still do per table), then also derive each table's Arrow schema (Table::ArrowSchema: the
  // bulk of a cold call).
  constexpr const char* kSteps[] = {
      "in process: ListTables + LoadTable of each",
      "in process: ListTables + LoadTable + Table::ArrowSchema of each",
  };
  catalog::Namespace ns{{"meta"}};
  for (int step = 0; step < 2; ++step) {
    std::vector<double> ms;
    for (int call = 0; call < std::min(options.calls, 10); ++call) {
      double start = NowSeconds();
      SKADE_ASSIGN_OR_RETURN(auto tables, lake.catalog().ListTables(ns));
      for (const auto& ident : tables) {
        SKADE_ASSIGN_OR_RETURN(auto table, lake.LoadTable(ident));
        if (step == 1) SKADE_RETURN_IF_ERROR(table->ArrowSchema());
      }
      ms.push_back((NowSeconds() - start) * 1e3);
    }
    report(kSteps[step], ms);
  }
  return Status::Ok();
}

// First rows (issue 36, item 2): a 1M-row, 4-column result (`id < 1000000` of ns.t: the first
// file when the table has 10M rows in 10 files), time to the first record batch and to the last,
// through Flight SQL (one cookie-less client, loopback) and from DuckDB in process.
Status FirstRowsBenchmark(sql::LakeSql& lake, DuckDbAlone& alone, const Options& options) {
  const int64_t want = std::min<int64_t>(options.rows, 1'000'000);
  const std::string sql = "SELECT id, qty, price, amount FROM skade.\"ns\".t WHERE id < " + std::to_string(want);
  pbsql::CommandStatementQuery query;
  query.set_query(sql);
  const std::string command = PackCommand(query);
  flightsql::ServerOptions server_options;
  server_options.port = 0;
  SKADE_ASSIGN_OR_RETURN(auto server, flightsql::FlightSqlServer::Start(lake, server_options));
  FlightClient client(server->port());
  std::cout << "\n== first rows: " << sql << " (load " << LoadAverage() << ")\n";
  struct Series {
    std::vector<double> first, last, cpu, info;
  };
  static const char* const kNames[] = {"skade", "flight", "duckdb"};
  Series base, flight, duck;  // skade in process, through Flight SQL, DuckDB alone
  const int rounds = std::max(options.repeat, 5);
  for (int rep = -1; rep < rounds; ++rep) {  // one warm-up round, then rotating
    for (int k = 0; k < 3; ++k) {
      const int which = (k + std::max(rep, 0)) % 3;
      if (!options.first_rows_only.empty() && options.first_rows_only != kNames[which]) continue;
      Result<QueryRun> run = which == 0   ? RunBaseline(lake, sql)
                             : which == 1 ? RunFlightCommand(client, command)
                                          : alone.Run("id, qty, price, amount", "id < " + std::to_string(want));
      if (!run.ok()) return run.status();
      if (run->stats.rows != want) {
        return Status::Internal("first rows: " + std::to_string(run->stats.rows) + " rows, expected " +
                                std::to_string(want));
      }
      if (rep < 0) continue;
      Series& s = which == 0 ? base : which == 1 ? flight : duck;
      s.first.push_back(run->first_batch_seconds * 1e3);
      s.last.push_back(run->seconds * 1e3);
      s.cpu.push_back(run->cpu_seconds * 1e3);
      s.info.push_back((run->seconds - run->doget_seconds) * 1e3);
    }
  }
  server->Shutdown();
  if (!options.first_rows_only.empty()) {
    const Series& s = options.first_rows_only == "skade" ? base : options.first_rows_only == "flight" ? flight : duck;
    std::cout << options.first_rows_only << ": first batch median " << Median(s.first) << " ms, whole result median "
              << Median(s.last) << " ms, CPU median " << Median(s.cpu) << " ms\n";
    return Status::Ok();
  }
  auto line = [](const std::string& name, const std::vector<double>& first, const std::vector<double>& last,
                 const std::vector<double>& cpu) {
    std::cout << name << ": first batch median " << Median(first) << " ms (best " << Best(first)
              << "), whole result median " << Median(last) << " ms (best " << Best(last) << "), CPU median "
              << Median(cpu) << " ms\n";
  };
  line("DuckDB alone in process (its own Arrow stream; the files given)", duck.first, duck.last, duck.cpu);
  line("skade in process (Database::QueryArrow)", base.first, base.last, base.cpu);
  line("Flight SQL DoGet (GetFlightInfo + DoGet)", flight.first, flight.last, flight.cpu);
  std::cout << "  of which GetFlightInfo: median " << Median(flight.info) << " ms\n";
  {
    // skade's engine reading the same files itself: no view, no catalog (what a view's read
    // costs beyond the files' own).
    std::vector<double> f, l, c;
    for (int i = 0; i < rounds; ++i) {
      QueryRun run;
      double cpu_start = ProcessCpuSeconds();
      double start = NowSeconds();
      SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream,
                             lake.db().QueryArrow("SELECT id, qty, price, amount FROM read_parquet([" + alone.files() +
                                                  "]) WHERE id < " + std::to_string(want)));
      double first_batch_at = 0;
      SKADE_ASSIGN_OR_RETURN(run.stats.rows, DrainStream(stream, &first_batch_at));
      if (run.stats.rows != want) return Status::Internal("first rows: the files alone gave " + std::to_string(run.stats.rows));
      l.push_back((NowSeconds() - start) * 1e3);
      f.push_back((first_batch_at - start) * 1e3);
      c.push_back((ProcessCpuSeconds() - cpu_start) * 1e3);
    }
    line("skade's engine on the files alone (Database::QueryArrow of read_parquet)", f, l, c);
  }
  std::cout << "ratio DuckDB alone/Flight, whole result: median " << Median(duck.last) / Median(flight.last)
            << "; first batch: median " << Median(duck.first) / Median(flight.first) << "\n";
  std::cout << "ratio skade in process/Flight, whole result: median " << Median(base.last) / Median(flight.last)
            << "; first batch: median " << Median(base.first) / Median(flight.first) << "\n";
  return Status::Ok();
}

// Threads of this process (server, clients, DuckDB).
int64_t ThreadCount() { return ProcStatusKb("Threads"); }

// One small query's latency in ms per run, `runs` times on `client`.
Result<std::vector<double>> SmallQueryMillis(FlightClient& client, const std::string& command, int runs) {
  std::vector<double> ms;
  for (int k = 0; k < runs; ++k) {
    SKADE_ASSIGN_OR_RETURN(QueryRun run, RunFlightCommand(client, command));
    if (run.stats.rows != 1) return Status::Internal("the small query returned " + std::to_string(run.stats.rows) + " rows");
    ms.push_back(run.seconds * 1e3);
  }
  return ms;
}

// Many clients at once (issue 11, "Benchmarks"): `clients` clients each running a small query
// in a loop for `seconds` (queries/s, p50/p99), then one client's small query alone and beside
// `stalled` DoGets of the big table that never read (the p50 ratio, RSS and threads).
Status ConcurrencyBenchmark(sql::LakeSql& lake, const Options& options) {
  flightsql::ServerOptions server_options;
  server_options.port = 0;
  flightsql::AuthOptions auth;
  // One user per client (as BI users are); the stalled DoGets all come from one user.
  auth.users = {{"stall", "pw"}, {"good", "pw"}};
  for (int c = 0; c < options.clients; ++c) auth.users["load" + std::to_string(c)] = "pw";
  server_options.authenticator = std::make_shared<flightsql::Authenticator>(auth);
  SKADE_ASSIGN_OR_RETURN(auto server, flightsql::FlightSqlServer::Start(lake, server_options));
  auto basic = [](const std::string& user) { return "Basic " + EncodeBase64(user + ":pw"); };
  pbsql::CommandStatementQuery small;
  small.set_query("SELECT count(*), sum(id) FROM skade.\"ns\".small WHERE id % 7 = 3");
  const std::string small_command = PackCommand(small);

  std::cout << "\n== " << options.clients << " clients × the small query for " << options.seconds << " s (load "
            << LoadAverage() << ")\n";
  {
    std::vector<std::vector<double>> per_client(options.clients);
    std::vector<Status> failures(options.clients);
    std::vector<std::thread> threads;
    const double until = NowSeconds() + options.seconds;
    const double start = NowSeconds();
    for (int c = 0; c < options.clients; ++c) {
      threads.emplace_back([&, c] {
        FlightClient client(server->port(), basic("load" + std::to_string(c)));
        while (NowSeconds() < until) {
          auto run = SmallQueryMillis(client, small_command, 1);
          if (!run.ok()) {
            failures[c] = run.status();
            return;
          }
          per_client[c].push_back((*run)[0]);
        }
      });
    }
    for (auto& t : threads) t.join();
    const double elapsed = NowSeconds() - start;
    for (const Status& st : failures) SKADE_RETURN_IF_ERROR(st);
    std::vector<double> all;
    for (const auto& v : per_client) all.insert(all.end(), v.begin(), v.end());
    std::cout << all.size() << " queries in " << elapsed << " s: " << static_cast<double>(all.size()) / elapsed
              << " queries/s; latency p50 " << Percentile(all, 50) << " ms, p99 " << Percentile(all, 99) << " ms, max "
              << Percentile(all, 100) << " ms\n";
  }

  std::cout << "\n== one client's small query alone and beside " << options.stalled
            << " DoGets of the big table that never read (load " << LoadAverage() << ")\n";
  FlightClient good(server->port(), basic("good"));
  SKADE_RETURN_IF_ERROR(SmallQueryMillis(good, small_command, 5).status());  // warm-up
  SKADE_ASSIGN_OR_RETURN(auto idle, SmallQueryMillis(good, small_command, 30));
  const int64_t rss_before = ProcStatusKb("VmRSS"), threads_before = ThreadCount();
  std::vector<std::unique_ptr<FlightClient>> stall_clients;
  std::vector<std::unique_ptr<FlightClient::OpenCall>> stalled;
  pbsql::CommandStatementQuery big;
  big.set_query("SELECT * FROM skade.\"ns\".t");
  for (int k = 0; k < options.stalled; ++k) {
    stall_clients.push_back(std::make_unique<FlightClient>(server->port(), basic("stall")));
    SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, stall_clients.back()->GetFlightInfo(PackCommand(big)));
    stalled.push_back(stall_clients.back()->StartStalledDoGet(info.endpoint(0).ticket()));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the admitted ones fill their buffers and block
  SKADE_ASSIGN_OR_RETURN(auto busy, SmallQueryMillis(good, small_command, 30));
  const int64_t rss_busy = ProcStatusKb("VmRSS"), threads_busy = ThreadCount();
  std::cout << "alone: p50 " << Percentile(idle, 50) << " ms, p99 " << Percentile(idle, 99) << " ms; beside them: p50 "
            << Percentile(busy, 50) << " ms, p99 " << Percentile(busy, 99) << " ms; ratio of p50 "
            << Percentile(busy, 50) / Percentile(idle, 50) << "\n";
  std::cout << "process RSS " << rss_before / 1024 << " → " << rss_busy / 1024 << " MiB, threads " << threads_before
            << " → " << threads_busy << "\n";
  stalled.clear();
  stall_clients.clear();
  server->Shutdown();
  return Status::Ok();
}

int Main(int argc, char** argv) {
  CLI::App app{"Arrow Flight SQL server: DoGet throughput and GetTables latency"};
  Options options;
  app.add_option("--dir", options.dir,
                 "lake folder to create or reuse (default: a temp folder, removed)");
  app.add_option("--rows", options.rows, "rows of ns.t (checked; must match a reused table)")
      ->capture_default_str();
  app.add_option("--files", options.files, "data files of ns.t")->capture_default_str();
  app.add_option("--repeat", options.repeat, "DoGet repetitions per variant")
      ->capture_default_str();
  app.add_option("--tables", options.tables, "tables in schema meta")->capture_default_str();
  app.add_option("--calls", options.calls, "GetTables calls per variant")->capture_default_str();
  app.add_flag("--skip-doget", options.skip_doget, "no DoGet throughput benchmark");
  app.add_flag("--skip-first-rows", options.skip_first_rows, "no first-rows benchmark (1M rows x 4 columns)");
  app.add_flag("--skip-metadata", options.skip_metadata, "no metadata benchmark");
  app.add_flag("--skip-concurrency", options.skip_concurrency, "no many-clients benchmark");
  app.add_option("--clients", options.clients, "concurrency: clients in the query loop")->capture_default_str();
  app.add_option("--seconds", options.seconds, "concurrency: seconds of the query loop")->capture_default_str();
  app.add_option("--stalled", options.stalled, "concurrency: DoGets that never read")->capture_default_str();
  app.add_option("--only", options.only, "DoGet: one variant, no ratios (for profiling)")
      ->check(CLI::IsMember({"baseline", "zero-copy", "copy"}));
  app.add_option("--first-rows-only", options.first_rows_only, "first rows: one variant, no ratios (for profiling)")
      ->check(CLI::IsMember({"duckdb", "skade", "flight"}));
  CLI11_PARSE(app, argc, argv);

  bool temporary = options.dir.empty();
  if (temporary) {
    std::string pattern = (fs::temp_directory_path() / "skade-flightsql-bench.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "flightsql_bench: cannot create a temp folder\n";
      return 1;
    }
    options.dir = pattern;
  }
  auto fail = [&](const Status& st) {
    std::cerr << "flightsql_bench: " << st.ToString() << "\n";
    return 1;
  };
  int exit_code = 0;
  {
    // As `skade serve` opens it: SQLite catalog in the warehouse, DuckDB locked down to the
    // warehouse with the SQL catalog attached first.
    cli::LakeOpenOptions open;
    open.use = cli::LakeOpenOptions::Use::kCreate;  // a new folder becomes a lake, as for serve
    open.lock_down = true;
    open.attach_in_memory = {kCatalogName};
    cli::LakeArgs lake_args;
    lake_args.warehouse = options.dir;
    Result<cli::Lake> lake = cli::OpenLake(lake_args, open);
    if (!lake.ok()) return fail(lake.status());
    std::cout << "lake " << lake->warehouse << ", " << std::thread::hardware_concurrency()
              << " cores, load " << LoadAverage() << "\n";
    Status st = options.skip_doget && options.skip_first_rows && options.skip_concurrency
                    ? Status::Ok()
                    : EnsureBigTable(*lake, options);
    if (st.ok() && !options.skip_concurrency) st = EnsureTable(*lake, SmallTable(), 10000, 1);
    if (st.ok() && !options.skip_metadata) st = EnsureMetaTables(*lake, options.tables);
    if (!st.ok()) return fail(st);
    auto lake_sql = sql::LakeSql::Open(*lake->catalog, *lake->io, *lake->db, kCatalogName);
    if (!lake_sql.ok()) return fail(lake_sql.status());
    std::unique_ptr<DuckDbAlone> alone;
    if (st.ok() && !(options.skip_doget && options.skip_first_rows)) {
      auto opened = DuckDbAlone::Open(lake->warehouse + "/ns/" + BigTable().name);
      if (opened.ok()) alone = std::move(*opened);
      st = opened.status();
    }
    if (st.ok() && !options.skip_doget) st = DoGetBenchmark(**lake_sql, *alone, options);
    if (st.ok() && !options.skip_first_rows) st = FirstRowsBenchmark(**lake_sql, *alone, options);
    if (st.ok() && !options.skip_metadata) st = MetadataBenchmark(**lake_sql, options);
    if (st.ok() && !options.skip_concurrency) st = ConcurrencyBenchmark(**lake_sql, options);
    if (!st.ok()) exit_code = fail(st);
    std::cout << "peak RSS " << ProcStatusKb("VmHWM") / 1024 << " MiB, load " << LoadAverage()
              << "\n";
  }
  if (temporary) {
    std::error_code ec;
    fs::remove_all(options.dir, ec);
  }
  return exit_code;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
