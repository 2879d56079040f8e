#include "skade/catalog/catalog.h"

#include <algorithm>

#include <string>
#include <string_view>
#include <vector>

namespace skade::catalog {

Result<Namespace> Namespace::Parse(std::string_view dotted) {
  Namespace ns;
  // The empty string is the root namespace (no levels), used to list top-level namespaces.
  if (dotted.empty()) return ns;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string_view level =
        dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (level.empty()) {
      return Status::InvalidArgument("namespace '" + std::string(dotted) + "' has an empty level");
    }
    ns.levels.emplace_back(level);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return ns;
}

Status Namespace::Validate() const {
  if (levels.empty()) return Status::InvalidArgument("namespace is empty");
  for (const std::string& level : levels) {
    if (level.empty()) {
      return Status::InvalidArgument("namespace '" + ToString() + "' has an empty level");
    }
    // Namespaces are stored dot-joined (Iceberg JDBC catalog), so a '.' inside a level could
    // not be told apart from a level separator (DESIGN §4).
    if (level.find('.') != std::string::npos) {
      return Status::InvalidArgument("namespace level '" + level + "' contains '.'");
    }
  }
  return Status::Ok();
}

std::string Namespace::ToString() const {
  std::string out;
  for (size_t i = 0; i < levels.size(); ++i) {
    if (i > 0) out += '.';
    out += levels[i];
  }
  return out;
}

bool Namespace::Contains(const Namespace& other) const {
  if (other.levels.size() < levels.size()) return false;
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i] != other.levels[i]) return false;
  }
  return true;
}

Result<TableIdent> TableIdent::Parse(std::string_view dotted) {
  size_t dot = dotted.rfind('.');
  if (dot == std::string_view::npos) {
    return Status::InvalidArgument("table identifier '" + std::string(dotted) +
                                   "' has no namespace");
  }
  std::string_view name = dotted.substr(dot + 1);
  if (name.empty()) {
    return Status::InvalidArgument("table identifier '" + std::string(dotted) +
                                   "' has an empty table name");
  }
  SKADE_ASSIGN_OR_RETURN(Namespace ns, Namespace::Parse(dotted.substr(0, dot)));
  if (ns.empty()) {
    return Status::InvalidArgument("table identifier '" + std::string(dotted) +
                                   "' has an empty namespace");
  }
  return TableIdent{std::move(ns), std::string(name)};
}

std::string TableIdent::ToString() const {
  std::string out = ns.ToString();
  if (!out.empty()) out += '.';
  out += name;
  return out;
}

Result<std::vector<Namespace>> ListNamespacesBelow(Catalog& catalog, const Namespace& parent) {
  std::vector<Namespace> all;
  std::vector<Namespace> stack = {parent};
  while (!stack.empty()) {
    Namespace cur = stack.back();
    stack.pop_back();
    SKADE_ASSIGN_OR_RETURN(std::vector<Namespace> children, catalog.ListNamespaces(cur));
    for (Namespace& child : children) {
      all.push_back(child);
      stack.push_back(std::move(child));
    }
  }
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace skade::catalog
