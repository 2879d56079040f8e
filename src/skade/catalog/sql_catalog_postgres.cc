// SqlConnection over libpq: every statement goes through PQexecParams with text parameters
// (`?` placeholders are rewritten to $1, $2, …). A broken connection is reset once before a
// statement outside a transaction; inside a transaction the failure is returned (the
// transaction is lost with the connection).
#include <libpq-fe.h>

#include <charconv>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {
namespace {

struct PgConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct PgResultClearer {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgConnHandle = std::unique_ptr<PGconn, PgConnCloser>;
using PgResultHandle = std::unique_ptr<PGresult, PgResultClearer>;

// "CREATE TABLE IF NOT EXISTS" and friends send NOTICEs; libpq prints them to stderr unless a
// processor swallows them.
void IgnoreNotice(void*, const char*) {}

std::string TrimmedError(PGconn* conn) {
  std::string message = PQerrorMessage(conn);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

// Rewrites `?` placeholders to PostgreSQL's $n. skade's statements have no '?' elsewhere.
std::string NumberPlaceholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int next = 1;
  for (char c : sql) {
    if (c == '?') {
      out += '$';
      out += std::to_string(next++);
    } else {
      out += c;
    }
  }
  return out;
}

// Thread-compatible (one user at a time).
class PostgresConnection final : public SqlConnection {
 public:
  PostgresConnection(PgConnHandle conn, Access access) : conn_(std::move(conn)), access_(access) {}

  // Session settings, again after every reconnect.
  Status Configure() {
    PQsetNoticeProcessor(conn_.get(), IgnoreNotice, nullptr);
    if (access_ == Access::kReadOnly) {
      return Exec("SET default_transaction_read_only = on", {}).status();
    }
    return Status::Ok();
  }

  Dialect dialect() const override { return Dialect::kPostgres; }

  Result<SqlResult> Exec(std::string_view sql, const std::vector<SqlParam>& params) override {
    bool idle_before = PQtransactionStatus(conn_.get()) == PQTRANS_IDLE;
    if (PQstatus(conn_.get()) == CONNECTION_BAD) {
      if (!idle_before) return Status::Unavailable("postgres connection lost in a transaction");
      SKADE_RETURN_IF_ERROR(EnsureConnected());
    }
    std::string text = NumberPlaceholders(sql);
    std::vector<std::string> storage(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      if (const auto* number = std::get_if<int64_t>(&params[i])) {
        storage[i] = std::to_string(*number);
        values[i] = storage[i].c_str();
      } else if (const auto* str = std::get_if<std::string>(&params[i])) {
        values[i] = str->c_str();
      }
    }
    PgResultHandle result(PQexecParams(conn_.get(), text.c_str(), static_cast<int>(values.size()),
                                       nullptr, values.data(), nullptr, nullptr, 0));
    if (PQstatus(conn_.get()) == CONNECTION_BAD && idle_before) {
      // The server went away between statements (restart, idle timeout): reconnect once and
      // run the statement again. Safe because no transaction was open.
      SKADE_RETURN_IF_ERROR(EnsureConnected());
      result.reset(PQexecParams(conn_.get(), text.c_str(), static_cast<int>(values.size()), nullptr,
                                values.data(), nullptr, nullptr, 0));
    }
    if (!result) return Status::Unavailable("postgres: " + TrimmedError(conn_.get()));
    ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      std::string message = "postgres: " + TrimmedError(conn_.get());
      if (PQstatus(conn_.get()) == CONNECTION_BAD) return Status::Unavailable(std::move(message));
      const char* state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
      std::string sqlstate = state ? state : "";
      if (sqlstate == "23505") return Status::AlreadyExists(std::move(message));
      if (sqlstate.rfind("23", 0) == 0) return Status::InvalidArgument(std::move(message));
      if (sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57", 0) == 0 || sqlstate == "40001" ||
          sqlstate == "40P01" || sqlstate == "55P03") {
        return Status::Unavailable(std::move(message));
      }
      return Status::Internal(std::move(message));
    }
    SqlResult out;
    int rows = PQntuples(result.get());
    int columns = PQnfields(result.get());
    out.rows.reserve(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      SqlRow row(static_cast<size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(result.get(), r, c)) continue;
        row[static_cast<size_t>(c)] = std::string(
            PQgetvalue(result.get(), r, c), static_cast<size_t>(PQgetlength(result.get(), r, c)));
      }
      out.rows.push_back(std::move(row));
    }
    const char* affected = PQcmdTuples(result.get());
    if (affected && *affected) {
      std::string_view digits(affected);
      std::from_chars(digits.data(), digits.data() + digits.size(), out.affected);
    }
    return out;
  }

  Status BeginWrite() override {
    SKADE_RETURN_IF_ERROR(EnsureConnected());
    return Exec("BEGIN", {}).status();
  }

  bool InTransaction() override {
    PGTransactionStatusType status = PQtransactionStatus(conn_.get());
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
  }

  Status EnsureConnected() override {
    if (PQstatus(conn_.get()) == CONNECTION_OK) return Status::Ok();
    PQreset(conn_.get());
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      return Status::Unavailable("postgres reconnect failed: " + TrimmedError(conn_.get()));
    }
    return Configure();
  }

 private:
  PgConnHandle conn_;
  Access access_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& conninfo, Access access) {
  PgConnHandle conn(PQconnectdb(conninfo.c_str()));
  if (!conn) return Status::Unavailable("postgres: out of memory connecting");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Status::Unavailable("postgres connect: " + TrimmedError(conn.get()));
  }
  auto connection = std::make_unique<PostgresConnection>(std::move(conn), access);
  SKADE_RETURN_IF_ERROR(connection->Configure());
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace skade::catalog::internal
