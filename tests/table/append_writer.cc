// Test helper process for coalesce_test.cc: THREADS threads of one process append one-row
// batches (w, c) to one table of a SQLite catalog until killed, w = FIRST_WRITER + thread and
// c = 0, 1, …; after each acknowledged append a line "w c snapshot_id commit_seq" goes to
// ACK_FILE with one write(2), so a reader after a SIGKILL sees every acknowledgement given.
//   append_writer CATALOG_DB WAREHOUSE TABLE THREADS FIRST_WRITER ACK_FILE [CRASH_POINT]
// CRASH_POINT arms base/crash_point.h in this process only. Exits 1 on the first failed append.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "skade/catalog/sql_catalog.h"
#include "skade/engine/database.h"
#include "skade/table/table.h"

namespace {

int Run(int argc, char** argv) {
  using namespace skade;
  if (argc < 7) {
    std::cerr << "usage: append_writer CATALOG_DB WAREHOUSE TABLE THREADS FIRST_WRITER ACK_FILE [CRASH_POINT]\n";
    return 2;
  }
  if (argc > 7) ::setenv("SKADE_CRASH_POINT", argv[7], 1);
  const int threads = std::atoi(argv[4]);
  const int first_writer = std::atoi(argv[5]);
  const int ack = ::open(argv[6], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (ack < 0) {
    std::cerr << "cannot open " << argv[6] << "\n";
    return 2;
  }
  auto io = io::MakeLocalFileIO();
  auto db = engine::Database::Open({});
  if (!db.ok()) {
    std::cerr << db.status().ToString() << "\n";
    return 2;
  }
  catalog::SqlCatalogOptions o;
  o.uri = std::string("sqlite://") + argv[1];
  o.warehouse = argv[2];
  auto cat = catalog::OpenSqlCatalog(o, *io);
  auto ident = catalog::TableIdent::Parse(argv[3]);
  if (!cat.ok() || !ident.ok()) {
    std::cerr << (cat.ok() ? ident.status() : cat.status()).ToString() << "\n";
    return 2;
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, w = first_writer + t] {
      auto table = table::Table::Load(**cat, *io, **db, *ident);
      if (!table.ok()) {
        std::cerr << table.status().ToString() << "\n";
        std::_Exit(1);
      }
      for (int c = 0;; ++c) {
        auto r = (*table)->Append({"SELECT " + std::to_string(w) + " AS w, " + std::to_string(c) + " AS c", nullptr});
        if (!r.ok()) {
          std::cerr << "append " << w << " " << c << ": " << r.status().ToString() << "\n";
          std::_Exit(1);
        }
        std::string line = std::to_string(w) + " " + std::to_string(c) + " " + std::to_string(r->snapshot_id) + " " +
                           std::to_string(r->commit_seq) + "\n";
        if (::write(ack, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(1);
      }
    });
  }
  for (auto& w : writers) w.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
