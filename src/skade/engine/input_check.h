// Checks of input files DuckDB reads badly: JSON nested deeper than DuckDB can take (its type
// detection recurses once per level, so '[' * 20000 overflows the stack), checked before
// DuckDB sees the file; and, when DuckDB cannot make out a CSV file's dialect, the exact line
// that breaks it. Each is one streaming pass over the file (plain, .gz or .zst).
#pragma once

#include <string>

#include "skade/base/status.h"

namespace skade::engine {

// The deepest nesting of arrays and objects skade ingests (documented in the README).
inline constexpr int kMaxJsonDepth = 128;

// kInvalidArgument naming the file, line and depth when it nests deeper than `max_depth`;
// kNotFound / kIoError when it cannot be read. Strings (and their escapes) are skipped.
Status CheckJsonDepth(const std::string& path, int max_depth = kMaxJsonDepth);

// Reads a CSV file as RFC 4180 with `delimiter` and '"' quotes and reports the first thing that
// breaks it: kInvalidArgument naming the line of a record whose field count differs from the
// header's, or of a quote that is never closed; Ok when the file is regular.
Status DiagnoseCsv(const std::string& path, char delimiter);

}  // namespace skade::engine
