// `skade sql` as a session: one lake, one LakeSql (its views and manifest cache kept between
// statements), statements run one after another — from the command line, a script or the
// interactive shell — with the shell's dot commands (.tables, .schema, .mode, …).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/cli/lake.h"
#include "skade/cli/result_box.h"
#include "skade/sql/lake_sql.h"

namespace skade::cli {

struct SqlSessionOptions {
  OutputFormat format = OutputFormat::kTable;
  bool pushdown = true;
  BoxOptions box;
  bool timer = false;  // print each statement's run time
};

// Thread-compatible, except Interrupt, which any thread (a signal watcher) may call.
class SqlSession {
 public:
  // Opens the lake for `use` (kWrite for sessions that may write; kRead for one query).
  static Result<std::unique_ptr<SqlSession>> Open(const LakeArgs& lake_args, LakeOpenOptions::Use use,
                                                  SqlSessionOptions options);
  ~SqlSession();
  SqlSession(const SqlSession&) = delete;
  SqlSession& operator=(const SqlSession&) = delete;

  // Runs one statement: a query or export writes its rows to `out` in the session's format;
  // an Iceberg write statement commits and writes "<TYPE> <rows>"; USE ns makes unqualified
  // names resolve in the lake's namespace ns (kNotFound for a namespace the lake lacks).
  // Statements other than those are refused (kInvalidArgument), as is an empty one.
  Status Run(const std::string& sql, std::ostream& out);

  // Runs a dot command (".tables", ".schema t", ".mode csv", …; ".help" lists them). Returns
  // false for ".quit"/".exit", true otherwise; kInvalidArgument for an unknown command or a
  // wrong argument.
  Result<bool> RunDotCommand(const std::string& line, std::ostream& out);

  // Interrupts the statement running now (it fails with "Interrupted").
  void Interrupt();

  const SqlSessionOptions& options() const { return options_; }

 private:
  SqlSession(Lake lake, std::unique_ptr<sql::LakeSql> views, SqlSessionOptions options);
  Status Execute(const std::string& sql, std::ostream& out);
  Status ListTables(const std::string& pattern, std::ostream& out);
  // USE ns (SET schema = 'ns'): unqualified table names resolve in `ns` from then on.
  Status Use(const std::string& name);

  Lake lake_;
  std::unique_ptr<sql::LakeSql> views_;
  SqlSessionOptions options_;
  std::string schema_;  // the namespace USE chose, dotted; "" = none
  // Over lake_.db, each connection in schema_ (null before a USE); declared after lake_ and
  // views_, so destroyed before them.
  std::unique_ptr<engine::Database> schema_db_;
};

}  // namespace skade::cli
