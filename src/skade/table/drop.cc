#include "skade/table/drop.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "skade/base/log.h"
#include "skade/iceberg/references.h"
#include "skade/iceberg/relocation.h"
#include "skade/io/local_folders.h"
#include "skade/io/location.h"

namespace skade::table {
namespace {

std::string Bytes(int64_t n) {
  char buf[32];
  if (n >= 1000000000) {
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(n) / 1e9);
  } else if (n >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(n) / 1e6);
  } else if (n >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1f kB", static_cast<double>(n) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  }
  return buf;
}

std::string Files(int64_t n) { return std::to_string(n) + (n == 1 ? " file" : " files"); }

// Whether `location` is read through the local file system (where folders exist).
bool IsLocal(const std::string& location) {
  return !io::IsObjectStoreLocation(location) &&
         (io::LocationScheme(location).empty() || io::LocationScheme(location) == "file");
}

}  // namespace

Result<DropReport> DropTable(catalog::Catalog& catalog, io::FileIO& io, const catalog::TableIdent& ident,
                             const DropOptions& options) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableState state, catalog.LoadTable(ident));
  DropReport report;
  report.table = ident;
  report.mode = options.mode;
  report.location = state.metadata->location;
  const bool purge = options.mode == catalog::DropMode::kPurge;
  // Everything that can refuse a purge is asked before the catalog drops anything.
  if (purge) {
    if (report.location.empty()) {
      return Status::InvalidArgument("table " + ident.ToString() + " records no location: there is nothing to purge by");
    }
    const std::string& warehouse = catalog.warehouse();
    if (options.scope == DropOptions::Scope::kWarehouse && !warehouse.empty() &&
        !io::IsWithin(report.location, warehouse)) {
      return Status::PermissionDenied("table " + ident.ToString() + " lives at " + report.location +
                                      ", outside the warehouse " + warehouse +
                                      " (a registered table may be another system's): purging its files needs "
                                      "`skade drop " + ident.ToString() + " --purge --force`; a drop without purge "
                                      "leaves them");
    }
    // A copy registered away from where it was written is read from its metadata file's folder
    // (iceberg/relocation.h), yet the catalog purges below the location the metadata records:
    // that may be the original table's folder, or nothing of this copy's.
    const std::string& file = state.metadata_location;
    if (IsLocal(file)) {
      iceberg::Relocation r = iceberg::DetectRelocation(*state.metadata, iceberg::TableDirOfMetadataFile(file));
      if (!r.map.empty()) {
        return Status::InvalidArgument("table " + ident.ToString() + " is read from " +
                                       iceberg::TableDirOfMetadataFile(file) + " but its metadata records " +
                                       report.location +
                                       ": a purge would delete under the recorded location; drop it without purge "
                                       "and remove its folder yourself");
      }
    }
  }
  const std::string prefix = io::JoinLocation(report.location, "");
  std::map<std::string, int64_t> before;  // location -> size
  if (!report.location.empty() && (purge || options.count == DropOptions::Count::kFiles)) {
    Result<std::vector<io::FileInfo>> listed = io.List(prefix);
    if (listed.ok()) {
      report.listed = true;
      for (const io::FileInfo& f : *listed) {
        before[f.location] = f.size;
        ++report.files_before;
        report.bytes_before += f.size;
      }
    } else {
      SKADE_LOG_DEBUG("drop {}: cannot list {}: {}", ident.ToString(), report.location, listed.status().ToString());
    }
  }
  if (purge) {
    // What the metadata names outside its location stays (DESIGN §11): counted for the report.
    Result<std::unordered_set<std::string>> referenced =
        iceberg::ReferencedFiles(io, state.metadata_location, *state.metadata);
    if (referenced.ok()) {
      const std::string own = io::NormalizeLocation(report.location);
      int64_t outside = 0;
      for (const std::string& f : *referenced) outside += io::IsWithin(f, own) ? 0 : 1;
      report.outside_files = outside;
    } else {
      report.outside_files = std::nullopt;
      SKADE_LOG_WARN("purge {}: cannot tell which files its metadata names outside {}: {}", ident.ToString(),
                     report.location, referenced.status().ToString());
    }
  }
  // Only while the table is what was checked above: a commit since (a set-location, say) makes
  // the drop a kConflict rather than a purge of a location nobody checked.
  SKADE_RETURN_IF_ERROR(catalog.DropTable(ident, options.mode, state.metadata_location));
  if (!purge) return report;
  // The drop has happened and is the answer; what follows only reports and tidies up.
  if (report.listed) {
    Result<std::vector<io::FileInfo>> after = io.List(prefix);
    if (after.ok()) {
      std::set<std::string> left;
      for (const io::FileInfo& f : *after) left.insert(f.location);
      for (const auto& [location, size] : before) {
        if (left.count(location)) continue;
        ++report.removed_files;
        report.removed_bytes += size;
      }
      report.left_files.assign(left.begin(), left.end());
    } else {
      SKADE_LOG_WARN("purge {}: cannot list {} after the purge: {}", ident.ToString(), report.location,
                     after.status().ToString());
    }
  }
  // The folders go by the location's normal form (DESIGN §11: "..", file: spellings and a host
  // resolved once), never the warehouse itself, and under kWarehouse only inside it.
  const std::string folder = io::NormalizeLocation(report.location);
  const std::string& warehouse = catalog.warehouse();
  const bool in_bounds = warehouse.empty() || options.scope == DropOptions::Scope::kAnywhere ||
                         io::IsWithin(folder, warehouse);
  const bool is_warehouse = !warehouse.empty() && folder == io::NormalizeLocation(warehouse);
  if (IsLocal(folder) && in_bounds && !is_warehouse) {
    Result<int64_t> removed = io::RemoveEmptyFolders(io::LocalPath(folder));
    if (removed.ok()) {
      report.removed_folders = *removed;
    } else {
      SKADE_LOG_WARN("purge {}: {}", ident.ToString(), removed.status().ToString());
    }
  }
  return report;
}

std::string DescribeDrop(const DropReport& r) {
  const std::string table = r.table.ToString();
  if (r.mode == catalog::DropMode::kKeepFiles) {
    std::string out = "dropped table " + table + " from the catalog; ";
    if (r.location.empty()) return out + "it recorded no location";
    if (r.listed) {
      out += "its " + Files(r.files_before) + " (" + Bytes(r.bytes_before) + ") stay";
    } else {
      out += "its files stay";
    }
    return out + " at " + r.location + " (DROP TABLE … PURGE or `skade drop --purge` deletes a table's files with it)";
  }
  std::string out = "dropped table " + table + " and purged its files";
  if (!r.listed) return out + " (the catalog deleted them: " + r.location + " cannot be listed from here)";
  out += ": removed " + Files(r.removed_files) + " (" + Bytes(r.removed_bytes) + ") under " + r.location;
  if (!r.left_files.empty()) {
    out += "\nkept " + Files(static_cast<int64_t>(r.left_files.size())) +
           " under it that another table owns or references, or that could not be deleted (the log says which):";
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < r.left_files.size() && i < kShown; ++i) out += "\n  " + r.left_files[i];
    if (r.left_files.size() > kShown) out += "\n  …";
  }
  if (!r.outside_files) {
    out += "\nits metadata could not be read through to tell which files it names elsewhere; none outside " +
           r.location + " were touched";
  } else if (*r.outside_files > 0) {
    out += "\nleft " + Files(*r.outside_files) + " its metadata names outside " + r.location +
           " untouched (a purge deletes only inside the table's location)";
  }
  return out;
}

}  // namespace skade::table
