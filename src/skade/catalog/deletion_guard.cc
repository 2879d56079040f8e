#include "skade/catalog/deletion_guard.h"

#include <unordered_map>
#include <unordered_set>

#include "skade/base/log.h"
#include "skade/iceberg/references.h"
#include "skade/io/location.h"

namespace skade::catalog {

Result<std::unique_ptr<DeletionGuard>> DeletionGuard::Open(Catalog& catalog, io::FileIO& io, const TableIdent& self,
                                                           std::string location) {
  if (location.empty()) return Status::InvalidArgument("table " + self.ToString() + " has no location");
  SKADE_ASSIGN_OR_RETURN(std::vector<TableLocation> all, catalog.ListTableLocations());
  std::vector<TableLocation> others;
  for (TableLocation& t : all) {
    if (t.ident != self) others.push_back(std::move(t));
  }
  return std::unique_ptr<DeletionGuard>(
      new DeletionGuard(catalog, io, self, std::move(location), std::move(others)));
}

Result<std::vector<std::string>> DeletionGuard::Filter(const std::vector<std::string>& candidates) {
  const std::string own = io::NormalizeLocation(location_);
  std::vector<std::string> keys;  // normalised, parallel to candidates; empty = keep
  int64_t outside = 0;
  std::unordered_map<std::string, int64_t> inside_other;
  size_t remaining = 0;
  for (const std::string& c : candidates) {
    std::string key = io::NormalizeLocation(c);
    if (!io::IsWithin(key, own)) {
      ++outside;
      keys.emplace_back();
      continue;
    }
    const TableLocation* holder = nullptr;
    for (const TableLocation& t : others_) {
      // A table at or below this one's location owns its subtree (compared ignoring case: on a
      // case-insensitive file system those are one folder). A table around this one (a legacy
      // overlap) is covered by the reference check below.
      if (!t.location.empty() && io::IsWithinIgnoringCase(t.location, own) &&
          io::IsWithinIgnoringCase(key, t.location)) {
        holder = &t;
        break;
      }
    }
    if (holder != nullptr) {
      ++inside_other[holder->ident.ToString()];
      keys.emplace_back();
      continue;
    }
    keys.push_back(std::move(key));
    ++remaining;
  }
  if (outside > 0) {
    SKADE_LOG_WARN("{}: kept {} file(s) outside the table's location {}", self_.ToString(), outside, location_);
  }
  for (const auto& [other, n] : inside_other) {
    SKADE_LOG_WARN("{}: kept {} file(s) inside the location of table {}", self_.ToString(), n, other);
  }
  // Files another table's metadata references stay, wherever that table lives (a snapshot,
  // a registered copy or add_files may point into this table's folder).
  if (remaining > 0) {
    std::unordered_set<std::string> wanted;
    for (const std::string& k : keys) {
      if (!k.empty()) wanted.insert(k);
    }
    for (const TableLocation& t : others_) {
      if (wanted.empty()) break;
      // A table dropped meanwhile references nothing; one whose files vanish under the walk
      // was changed by a concurrent expiry: read it again.
      Result<std::unordered_set<std::string>> referenced = Status::NotFound("not read");
      for (int attempt = 0; attempt < 5 && !referenced.ok() && referenced.status().code() == StatusCode::kNotFound;
           ++attempt) {
        Result<TableState> state = catalog_.LoadTable(t.ident);
        if (!state.ok() && state.status().code() == StatusCode::kNotFound) {
          referenced = std::unordered_set<std::string>();
          break;
        }
        if (!state.ok()) {
          referenced = state.status();
          break;
        }
        referenced = iceberg::ReferencedFiles(io_, state->metadata_location, *state->metadata);
      }
      SKADE_RETURN_IF_ERROR(referenced.status().WithContext("cannot check the references of table " + t.ident.ToString()));
      int64_t n = 0;
      for (auto it = wanted.begin(); it != wanted.end();) {
        if (referenced->count(*it)) {
          ++n;
          it = wanted.erase(it);
        } else {
          ++it;
        }
      }
      if (n > 0) SKADE_LOG_WARN("{}: kept {} file(s) that table {} references", self_.ToString(), n, t.ident.ToString());
    }
    for (std::string& k : keys) {
      if (!k.empty() && !wanted.count(k)) k.clear();
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!keys[i].empty()) out.push_back(candidates[i]);
  }
  return out;
}

}  // namespace skade::catalog
