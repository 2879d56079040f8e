#include "skade/cli/input_files.h"

#include <glob.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "skade/base/ascii.h"
#include "skade/engine/database.h"

namespace skade::cli {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The name without a compression suffix, lower case.
std::string BaseName(const std::string& path) {
  std::string name = AsciiLower(fs::path(path).filename().string());
  for (std::string_view z : {".gz", ".zst"}) {
    if (EndsWith(name, z)) name.resize(name.size() - z.size());
  }
  return name;
}

// The extensions ingest reads (engine::FileSourceSql).
bool Readable(const std::string& path) {
  constexpr std::array<std::string_view, 6> kExtensions = {".parquet", ".csv", ".tsv", ".json", ".ndjson", ".jsonl"};
  const std::string name = BaseName(path);
  return std::any_of(kExtensions.begin(), kExtensions.end(), [&](std::string_view e) { return EndsWith(name, e); });
}

Result<std::vector<std::string>> FolderFiles(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.is_regular_file(ec) && Readable(entry.path().string())) files.push_back(entry.path().string());
  }
  if (ec) return Status::IoError("list folder '" + folder + "': " + ec.message());
  if (files.empty()) {
    return Status::NotFound("folder '" + folder +
                            "' has no files to ingest (.parquet, .csv, .tsv, .json, .ndjson, .jsonl)");
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::vector<std::string>> GlobFiles(const std::string& pattern) {
  glob_t found = {};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &found);  // sorted
  std::vector<std::string> files;
  for (size_t i = 0; rc == 0 && i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
  ::globfree(&found);
  if (rc == GLOB_NOMATCH || (rc == 0 && files.empty())) return Status::NotFound("no file matches '" + pattern + "'");
  if (rc != 0) return Status::IoError("cannot expand '" + pattern + "'");
  return files;
}

bool IsGlob(const std::string& arg) {
  std::error_code ec;
  return arg.find_first_of("*?[") != std::string::npos && !fs::exists(arg, ec);
}

// One spelling per file, for finding repeats: absolute, links resolved where the file exists.
std::string Identity(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : canonical.string();
}

}  // namespace

Result<InputFiles> ExpandInputs(const std::vector<std::string>& args) {
  InputFiles out;
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    std::vector<std::string> files = {arg};
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      SKADE_ASSIGN_OR_RETURN(files, FolderFiles(arg));
    } else if (IsGlob(arg)) {
      SKADE_ASSIGN_OR_RETURN(files, GlobFiles(arg));
    }
    for (std::string& file : files) {
      if (!seen.insert(Identity(file)).second) {
        out.repeats.push_back(std::move(file));
      } else {
        out.files.push_back(std::move(file));
      }
    }
  }
  return out;
}

Result<char> ParseDelimiter(const std::string& text) {
  if (text == "\\t" || text == "tab" || text == "\t") return '\t';
  if (text.size() == 1 && text[0] != '"' && text[0] != '\n' && text[0] != '\r') return text[0];
  return Status::InvalidArgument("--delimiter '" + text + "': give one character (other than '\"'), or \\t for a tab");
}

}  // namespace skade::cli
