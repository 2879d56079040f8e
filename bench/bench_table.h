// A table folder's current snapshot, opened as skade's CLI opens a table (cli::LoadTable with
// its relocations), for the benchmarks that plan or count it without a catalog.
#pragma once

#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/cli/table_location.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"

namespace skade::bench {

struct CurrentSnapshot {
  std::unique_ptr<io::FileIO> local_io;
  cli::LoadedTable table;
  std::unique_ptr<io::FileIO> table_io;  // reads the table's files where they are now
  const iceberg::Snapshot* snapshot = nullptr;
  iceberg::SchemaPtr schema;
};

// kInvalidArgument when the table has no snapshot; the loader's errors otherwise.
inline Result<std::unique_ptr<CurrentSnapshot>> OpenCurrentSnapshot(const std::string& table) {
  auto out = std::make_unique<CurrentSnapshot>();
  out->local_io = io::MakeLocalFileIO();
  SKADE_ASSIGN_OR_RETURN(out->table, cli::LoadTable(*out->local_io, table, {}));
  out->table_io = io::MakeRelocatingFileIO(*out->local_io, out->table.locations);
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(out->table.metadata, {}));
  if (selected.snapshot == nullptr) return Status::InvalidArgument("no snapshot");
  out->snapshot = selected.snapshot;
  out->schema = selected.schema;
  return out;
}

}  // namespace skade::bench
