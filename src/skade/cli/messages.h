// Words for people: error text without skade's internal SQL names, and the nearest of a set
// of names for "did you mean".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::cli {

// `message` as a user may read it. DuckDB errors about the SQL skade builds around user text
// (a --where predicate inside a table scan, an input's conversion) name skade's relations and
// columns (__skade_src, __skade_file, …): the query excerpt ("LINE 1: …" and its caret) that
// shows skade's SQL is dropped, internal names leave "Candidate bindings", and a qualifier
// such as "__skade_src." goes; everything else, the user's names and values, stays.
std::string PublicMessage(std::string_view message);

// "skade: <status>" with PublicMessage applied, the line every command prints on failure.
std::string ErrorLine(const Status& status);

// The optimal-string-alignment distance (insertions, deletions, substitutions and swaps of two
// neighbours each cost 1), so "tabels" is 1 from "tables".
size_t EditDistance(std::string_view a, std::string_view b);

// The name in `names` nearest to `word`, when it is near enough to be a likely typo (at most
// a third of the word's length, and at least 1, edits away); ties go to the first listed.
std::optional<std::string> NearestName(std::string_view word, const std::vector<std::string>& names);

}  // namespace skade::cli
