// LocationMap: rewrites location prefixes, for tables copied from another machine whose
// metadata still records the original locations (and for relative-looking stored paths).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/io/file_io.h"

namespace skade::io {

// Immutable after setup; thread-safe for concurrent Apply.
class LocationMap {
 public:
  // Maps locations starting with `from` to `to` + rest. Trailing '/' is normalised so that
  // only whole path components match.
  void Add(std::string from, std::string to);
  // The rewritten location (longest matching prefix wins); `file:` schemes are stripped from
  // matches. Unchanged when nothing matches.
  std::string Apply(std::string_view location) const;
  bool empty() const { return rules_.empty(); }
  const std::vector<std::pair<std::string, std::string>>& rules() const { return rules_; }

 private:
  std::vector<std::pair<std::string, std::string>> rules_;
};

// A FileIO that applies `map` to every location before delegating to `base` (borrowed; must
// outlive the result).
std::unique_ptr<FileIO> MakeRelocatingFileIO(FileIO& base, LocationMap map);

}  // namespace skade::io
