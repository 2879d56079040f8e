#include "skade/catalog/placement.h"

#include "skade/base/uuid.h"
#include "skade/io/file_io.h"
#include "skade/io/location.h"
#include "skade/io/reserved_files.h"

namespace skade::catalog {

std::string NamespaceFolder(std::string_view warehouse, const Namespace& ns) {
  std::string out(warehouse);
  for (const std::string& level : ns.levels) out = io::JoinLocation(out, level);
  return out;
}

Status CheckLocationFree(const PlacementInputs& inputs, const TableIdent& self, std::string_view location) {
  // The catalog's own files are no folder for a table (io/reserved_files.h), at any depth.
  for (std::string at = io::NormalizeLocation(location); !at.empty();) {
    if (io::IsReservedFile(at)) {
      return Status::InvalidArgument("location " + std::string(location) + " is, or lies inside, the catalog's own file " + at);
    }
    const size_t slash = at.rfind('/');
    if (slash == std::string::npos || slash == 0 || io::IsObjectStoreLocation(at)) break;
    at.resize(slash);
  }
  if (!inputs.warehouse.empty() && io::IsWithin(inputs.warehouse, location)) {
    return Status::InvalidArgument("location " + std::string(location) + " holds the whole warehouse (" +
                                   inputs.warehouse + ")");
  }
  for (const TableLocation& t : inputs.tables) {
    if (t.ident == self || t.location.empty()) continue;
    if (io::Overlaps(location, t.location)) {
      std::string how = io::IsWithinIgnoringCase(location, t.location)
                            ? (io::IsWithinIgnoringCase(t.location, location) ? "is the location" : "lies inside")
                            : "contains the location";
      return Status::InvalidArgument("location " + std::string(location) + " " + how + " of table " +
                                     t.ident.ToString() + " (" + t.location + ")");
    }
  }
  if (!inputs.warehouse.empty()) {
    for (const Namespace& ns : inputs.namespaces) {
      std::string folder = NamespaceFolder(inputs.warehouse, ns);
      if (io::IsWithinIgnoringCase(folder, location)) {
        return Status::InvalidArgument("location " + std::string(location) + " holds the folder of namespace " +
                                       ns.ToString() + " (" + folder + ")");
      }
    }
  }
  return Status::Ok();
}

Result<std::string> PlaceTable(const PlacementInputs& inputs, const TableIdent& ident,
                               const std::function<Result<bool>(const std::string&)>& occupied) {
  if (inputs.warehouse.empty()) {
    return Status::InvalidArgument("create table " + ident.ToString() + ": no location and no warehouse");
  }
  const std::string natural = io::JoinLocation(NamespaceFolder(inputs.warehouse, ident.ns), ident.name);
  const std::string uuid = Uuid::NewV7().ToString();
  // The last candidate holds a '.', so it is no namespace's folder nor any natural location,
  // and its uuid makes it unique.
  const std::string candidates[] = {
      natural,
      natural + "-" + uuid.substr(uuid.size() - 8),
      io::JoinLocation(inputs.warehouse, ident.ToString() + "-" + uuid),
  };
  Status last;
  for (const std::string& candidate : candidates) {
    last = CheckLocationFree(inputs, ident, candidate);
    if (!last.ok()) continue;
    SKADE_ASSIGN_OR_RETURN(bool taken, occupied(candidate));
    if (taken) {
      last = Status::InvalidArgument("location " + candidate + " already holds files");
      continue;
    }
    return candidate;
  }
  return last.WithContext("no free location for table " + ident.ToString());
}

}  // namespace skade::catalog
