#include "skade/catalog/catalog.h"

#include <algorithm>
#include <charconv>

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

namespace {

// Length of the UTF-8 sequence starting at `s[i]`, or 0 when it is not well formed
// (overlong forms, surrogates and code points above U+10FFFF are refused).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// "'\n' (0x0A)" for messages: the character may not be printable.
std::string DescribeByte(unsigned char c) {
  static const char* kHex = "0123456789ABCDEF";
  std::string hex = {'0', 'x', kHex[c >> 4], kHex[c & 15]};
  if (c >= 0x20 && c < 0x7F) return "'" + std::string(1, static_cast<char>(c)) + "' (" + hex + ")";
  return "a control character (" + hex + ")";
}

}  // namespace

Status ValidateName(std::string_view name, std::string_view what) {
  auto bad = [&](const std::string& why) {
    std::string shown(name.substr(0, 64));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
    }
    return Status::InvalidArgument(std::string(what) + " '" + shown + (name.size() > 64 ? "…" : "") +
                                   "' " + why);
  };
  if (name.empty()) return Status::InvalidArgument(std::string(what) + " is empty");
  if (name.size() > kMaxNameBytes) {
    return bad("is " + std::to_string(name.size()) + " bytes long; the limit is " +
               std::to_string(kMaxNameBytes));
  }
  for (size_t i = 0; i < name.size();) {
    auto c = static_cast<unsigned char>(name[i]);
    // '/' and '\\' would make the name several path components (or escape its parent folder);
    // '.' separates levels in dotted identifiers and the JDBC catalog's namespace column.
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '.') {
      return bad("contains " + DescribeByte(c) + (c == '.' ? ", which separates levels" : ""));
    }
    size_t n = Utf8SequenceLength(name, i);
    if (n == 0) return bad("is not valid UTF-8");
    i += n;
  }
  return Status::Ok();
}

Status Namespace::Validate() const {
  if (levels.empty()) return Status::InvalidArgument("namespace is empty");
  for (const std::string& level : levels) {
    if (level.empty()) {
      return Status::InvalidArgument("namespace '" + ToString() + "' has an empty level");
    }
    SKADE_RETURN_IF_ERROR(ValidateName(level, "namespace level"));
  }
  std::string dotted = ToString();
  if (dotted.size() > kMaxNameBytes) {
    return Status::InvalidArgument("namespace '" + dotted.substr(0, 64) + "…' is " +
                                   std::to_string(dotted.size()) + " bytes long; the limit is " +
                                   std::to_string(kMaxNameBytes));
  }
  return Status::Ok();
}

Status TableIdent::Validate() const {
  SKADE_RETURN_IF_ERROR(ns.Validate());
  return ValidateName(name, "table name");
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

Status Catalog::UnregisterTable(const TableIdent& ident, const std::string& metadata_location) {
  return DropTable(ident, DropMode::kKeepFiles, metadata_location);
}

namespace {
Status NoViews() { return Status::NotImplemented("this catalog does not support views"); }
}  // namespace

Result<std::vector<TableIdent>> Catalog::ListViews(const Namespace&) { return NoViews(); }
Result<ViewState> Catalog::CreateView(const TableIdent&, const CreateViewRequest&) { return NoViews(); }
Result<ViewState> Catalog::LoadView(const TableIdent&) { return NoViews(); }
Result<ViewState> Catalog::CommitView(const ViewCommit&) { return NoViews(); }
Status Catalog::DropView(const TableIdent&) { return NoViews(); }
Status Catalog::RenameView(const TableIdent&, const TableIdent&) { return NoViews(); }
Result<ViewState> Catalog::RegisterView(const TableIdent&, const std::string&) { return NoViews(); }

Result<std::vector<TablePointer>> Catalog::ListTablePointers(const Namespace& ns) {
  SKADE_ASSIGN_OR_RETURN(std::vector<TableIdent> tables, ListTables(ns));
  std::vector<TablePointer> out;
  out.reserve(tables.size());
  for (TableIdent& ident : tables) {
    Result<TableState> state = LoadTable(ident);
    if (!state.ok() && state.status().code() == StatusCode::kNotFound) continue;  // dropped meanwhile
    SKADE_RETURN_IF_ERROR(state.status());
    out.push_back(TablePointer{std::move(ident), std::move(state->metadata_location)});
  }
  return out;
}

Result<std::vector<TableLocation>> Catalog::ListTableLocations() {
  SKADE_ASSIGN_OR_RETURN(std::vector<Namespace> namespaces, ListNamespacesBelow(*this, Namespace{}));
  std::vector<TableLocation> out;
  for (const Namespace& ns : namespaces) {
    SKADE_ASSIGN_OR_RETURN(std::vector<TableIdent> tables, ListTables(ns));
    for (TableIdent& ident : tables) {
      SKADE_ASSIGN_OR_RETURN(TableState state, LoadTable(ident));
      out.push_back(TableLocation{std::move(ident), state.metadata->location});
    }
  }
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

void DescribeAddedSnapshot(const iceberg::Snapshot& added, CommitLogEntry* entry) {
  auto count = [&](std::string_view key) {
    std::optional<std::string> value = added.SummaryValue(key);
    int64_t out = 0;
    if (value) std::from_chars(value->data(), value->data() + value->size(), out);
    return out;
  };
  entry->operation = added.operation();
  if (entry->operation.empty()) entry->operation = "append";
  entry->added_records = count("added-records");
  entry->deleted_records = count("deleted-records");
}

}  // namespace skade::catalog
