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
  // matches. A location that matches no prefix as written is matched again in its
  // ComparableLocation form (location.h), so one rule covers every spelling writers give a
  // root: "hdfs://nn:8020/w/t/f", "file:///w/t/f" and "/w/t/f" for "/w/t"; "s3a://b/t/f" for
  // "s3://b/t". Unchanged when nothing matches.
  std::string Apply(std::string_view location) const;
  bool empty() const { return rules_.empty(); }

 private:
  struct Rule {
    std::string from;
    std::string to;
    std::string comparable_from;  // ComparableLocation(from)
  };
  std::vector<Rule> rules_;
};

// A FileIO that applies `map` to every location before delegating to `base` (borrowed; must
// outlive the result).
std::unique_ptr<FileIO> MakeRelocatingFileIO(FileIO& base, LocationMap map);

}  // namespace skade::io
