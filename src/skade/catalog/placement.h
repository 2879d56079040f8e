// Where a new table's files go (DESIGN §11): a table location is never equal to, inside or
// around another table's location, nor equal to or around a namespace's folder. A table whose
// natural folder is taken gets a unique one instead.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"

namespace skade::catalog {

// What placement must not collide with.
struct PlacementInputs {
  std::string warehouse;
  std::vector<TableLocation> tables;  // every existing table with its location
  std::vector<Namespace> namespaces;  // every namespace, explicit or implied by a table
};

// The folder of a namespace: <warehouse>/<level>/<level>…
std::string NamespaceFolder(std::string_view warehouse, const Namespace& ns);

// kInvalidArgument naming the table or namespace `location` would be equal to, inside or
// around (compared after normalisation, ignoring case). `self` is left out of the tables.
Status CheckLocationFree(const PlacementInputs& inputs, const TableIdent& self, std::string_view location);

// The first free location of: the natural <warehouse>/<levels>/<name>; the same with a short
// random suffix ("<name>-<8 hex>"); <warehouse>/<a.b.name>-<uuid>, which no natural folder can
// be (levels and names never contain '.'). `occupied` says whether files already exist at a
// location (a dropped table's files, say); an occupied location is not free either.
Result<std::string> PlaceTable(const PlacementInputs& inputs, const TableIdent& ident,
                               const std::function<Result<bool>(const std::string&)>& occupied);

}  // namespace skade::catalog
