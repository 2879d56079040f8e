#include "skade/io/location_map.h"

#include <algorithm>

#include "skade/io/delegating_file_io.h"
#include "skade/io/location.h"

namespace skade::io {
namespace {

std::string StripSlash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool MatchesPrefix(std::string_view location, std::string_view prefix) {
  if (location.size() < prefix.size() || location.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return location.size() == prefix.size() || location[prefix.size()] == '/' ||
         prefix.back() == '/';
}

class RelocatingFileIO final : public DelegatingFileIO {
 public:
  RelocatingFileIO(FileIO& base, LocationMap map) : base_(base), map_(std::move(map)) {}

 private:
  Result<Target> Route(std::string_view location) override { return Target{&base_, map_.Apply(location), nullptr}; }

  FileIO& base_;
  LocationMap map_;
};

}  // namespace

void LocationMap::Add(std::string from, std::string to) {
  std::string comparable = ComparableLocation(from);
  rules_.push_back({StripSlash(std::move(from)), StripSlash(std::move(to)), std::move(comparable)});
  // Longest prefix first so Apply can take the first match.
  std::stable_sort(rules_.begin(), rules_.end(),
                   [](const Rule& a, const Rule& b) { return a.from.size() > b.from.size(); });
}

std::string LocationMap::Apply(std::string_view location) const {
  if (rules_.empty()) return std::string(location);
  const std::string local = LocalPath(location);
  for (const Rule& rule : rules_) {
    for (std::string_view candidate : {location, std::string_view(local)}) {
      if (MatchesPrefix(candidate, rule.from)) {
        return rule.to + std::string(candidate.substr(rule.from.size()));
      }
    }
  }
  // Another writer's spelling of a mapped root (scheme alias, file: form, file-system
  // authority): compare the one normal form.
  const std::string comparable = ComparableLocation(location);
  const Rule* best = nullptr;
  for (const Rule& rule : rules_) {
    if (!MatchesPrefix(comparable, rule.comparable_from)) continue;
    if (best == nullptr || rule.comparable_from.size() > best->comparable_from.size()) best = &rule;
  }
  if (best == nullptr) return std::string(location);
  return best->to + comparable.substr(best->comparable_from.size());
}

std::unique_ptr<FileIO> MakeRelocatingFileIO(FileIO& base, LocationMap map) {
  return std::make_unique<RelocatingFileIO>(base, std::move(map));
}

}  // namespace skade::io
