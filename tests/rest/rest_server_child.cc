// Test helper process for rest_idempotency_test.cc: the REST catalog server over a SQL catalog
// (SQLite or PostgreSQL) in a process of its own, so that a test can kill it mid-request.
//   rest_server_child CATALOG_URI WAREHOUSE [CRASH_POINT]
// Prints "port N" once it serves on 127.0.0.1, then serves until SIGTERM or SIGINT (exit 0).
// CRASH_POINT arms base/crash_point.h in this process only (the process SIGKILLs itself there).
#include <signal.h>
#include <stdlib.h>

#include <iostream>
#include <string>

#include "skade/catalog/sql_catalog.h"
#include "skade/io/file_io.h"
#include "skade/rest/server.h"

int main(int argc, char** argv) {
  using namespace skade;
  if (argc < 3) {
    std::cerr << "usage: rest_server_child CATALOG_URI WAREHOUSE [CRASH_POINT]\n";
    return 2;
  }
  if (argc > 3) ::setenv("SKADE_CRASH_POINT", argv[3], 1);
  // Blocked before any thread starts, so that every thread inherits the mask and sigwait below
  // takes the signal.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto io = io::MakeLocalFileIO();
  catalog::SqlCatalogOptions options;
  options.uri = argv[1];
  options.warehouse = argv[2];
  auto catalog = catalog::OpenSqlCatalog(options, *io);
  if (!catalog.ok()) {
    std::cerr << catalog.status().ToString() << "\n";
    return 2;
  }
  rest::RestOptions rest;
  rest.port = 0;
  rest.threads = 4;
  auto server = rest::RestServer::Start(**catalog, *io, rest);
  if (!server.ok()) {
    std::cerr << server.status().ToString() << "\n";
    return 2;
  }
  std::cout << "port " << (*server)->port() << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  (*server)->Shutdown();
  return 0;
}
