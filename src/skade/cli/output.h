// Writes query results for people and scripts: a box (cli/result_box.h), CSV (RFC 4180) or JSON
// (an array with one object per line). CSV and JSON stream; the box holds the rows it shows.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/cli/commands.h"
#include "skade/cli/result_box.h"
#include "skade/engine/database.h"

namespace skade::cli {

// "2024-01-02T03:04:05.678Z" for epoch milliseconds.
std::string FormatMillis(int64_t ms);

// Runs `sql` on `db` and writes its rows to `out` in `format` (a box as `box_options` say).
// Returns the row count.
Result<int64_t> WriteQuery(engine::Database& db, const std::string& sql, OutputFormat format,
                           const BoxOptions& box_options, std::ostream& out);
// The same with StdoutBoxOptions().
Result<int64_t> WriteQuery(engine::Database& db, const std::string& sql, OutputFormat format,
                           std::ostream& out);

}  // namespace skade::cli
