// The input files of `skade ingest`: folders and globs expanded, repeats dropped, and the
// --delimiter option.
#pragma once

#include <string>
#include <vector>

#include "skade/base/status.h"

namespace skade::cli {

struct InputFiles {
  std::vector<std::string> files;    // in the order given, each once
  std::vector<std::string> repeats;  // arguments naming a file already listed (dropped)
};

// Expands the ingest arguments: a folder stands for its files of the extensions ingest reads
// (.parquet, .csv, .tsv, .json, .ndjson, .jsonl, each optionally .gz/.zst), sorted by name,
// not recursing; an argument with * ? or [ that names no file is a glob skade expands (the
// shell did not), sorted; anything else is a file, as given. The same file reached twice
// (after making paths absolute and resolving links) is listed once. kNotFound for a glob that
// matches nothing or a folder with no such files.
Result<InputFiles> ExpandInputs(const std::vector<std::string>& args);

// Parses --delimiter: one character, or "\t" / "tab" for a tab. kInvalidArgument otherwise.
Result<char> ParseDelimiter(const std::string& text);

}  // namespace skade::cli
