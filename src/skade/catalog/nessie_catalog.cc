#include "skade/catalog/nessie_catalog.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <set>
#include <vector>

#include "skade/base/log.h"
#include "skade/base/url.h"
#include "skade/catalog/json_internal.h"
#include "skade/catalog/read_only_internal.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/sigv4.h"
#include "skade/base/json_parse_internal.h"

namespace skade::catalog {
namespace {

using internal::Dump;
using internal::Json;
using internal::Member;
using internal::StringMember;

// A listing follows at most this many pages (a server that never ends is broken).
constexpr int kMaxPages = 100000;

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Nessie's commit hashes: 8 to 64 hex digits (org.projectnessie.model.Validation.HASH_REGEX).
bool IsHash(std::string_view s) {
  return s.size() >= 8 && s.size() <= 64 && std::all_of(s.begin(), s.end(), IsHex);
}

// Nessie's reference names (Validation.REF_NAME_REGEX): a letter first, then letters, digits
// and . / _ -, never "..", ending in neither '.' nor '/'; or "-", the default branch.
bool IsRefName(std::string_view s) {
  if (s == "-") return true;
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '/' && c != '_' &&
        c != '-')
      return false;
  }
  return s.find("..") == std::string_view::npos && s.back() != '.' && s.back() != '/';
}

// The reference part of a URI, split: "main" → {main}, "main@h" → {main, h}, "@h" → {"", h}. A
// bare hash that is also a valid reference name (it starts with a-f) may be either: `ambiguous`.
struct RefSpec {
  std::string name;
  std::string hash;
  bool ambiguous = false;
};

Result<RefSpec> ParseRef(std::string_view ref) {
  RefSpec spec;
  if (ref.empty()) {
    spec.name = "-";
    return spec;
  }
  const auto bad = [&] {
    return Status::InvalidArgument(
        "Nessie reference '" + std::string(ref) +
        "' is not a branch or tag name, name@hash, @hash or a commit hash (8–64 hex "
        "digits); relative commits (~N, ^N, *T) are not supported");
  };
  if (size_t at = ref.find('@'); at != std::string_view::npos) {
    spec.name = std::string(ref.substr(0, at));
    spec.hash = std::string(ref.substr(at + 1));
    if (!spec.name.empty() && !IsRefName(spec.name)) return bad();
    if (!spec.hash.empty() && !IsHash(spec.hash)) return bad();
    if (spec.name.empty() && spec.hash.empty()) return bad();
    return spec;
  }
  if (IsHash(ref)) {
    if (IsRefName(ref)) {
      spec.name = std::string(ref);
      spec.ambiguous = true;
    } else {
      spec.hash = std::string(ref);
    }
    return spec;
  }
  if (!IsRefName(ref)) return bad();
  spec.name = std::string(ref);
  return spec;
}

// A string literal of the Common Expression Language, as the entries filter takes it.
std::string CelString(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// What Nessie's error model says about a failed call (NessieError: status, reason, message,
// errorCode).
struct NessieError {
  int status = 0;
  std::string code;  // errorCode: REFERENCE_NOT_FOUND, CONTENT_NOT_FOUND, BAD_REQUEST…
  std::string message;
};

NessieError ErrorBody(const io::HttpResponse& r) {
  NessieError e;
  e.status = r.status;
  Json body = ParseOrderedJson(r.body, "Nessie's error").ValueOr(Json());
  e.code = StringMember(body, "errorCode");
  e.message = StringMember(body, "message");
  if (e.message.empty()) e.message = StringMember(body, "reason");
  if (e.message.empty()) e.message = r.body.substr(0, 200);
  return e;
}

Status StatusOf(const NessieError& e, const std::string& what) {
  const std::string text = what + ": HTTP " + std::to_string(e.status) +
                           (e.code.empty() ? "" : " " + e.code) +
                           (e.message.empty() ? "" : ": " + e.message);
  switch (e.status) {
    case 400:
      return Status::InvalidArgument(text);
    case 401:
      return Status(StatusCode::kUnauthorized, text);
    case 403:
      return Status::PermissionDenied(text);
    case 404:
      return Status::NotFound(text);
    case 409:
      return Status::Conflict(text);
    case 429:
      return Status::Unavailable(text);
    default:
      break;
  }
  if (e.status >= 500) return Status::Unavailable(text);
  return Status::IoError(text);
}

// One entry of GET /trees/{ref}/entries: its key's elements and its content type.
struct Entry {
  std::vector<std::string> key;
  std::string type;
};

Result<std::vector<std::string>> KeyElements(const Json& key, const std::string& what) {
  const Json* elements = Member(key, "elements");
  if (elements == nullptr || !elements->is_array() || elements->empty()) {
    return Status::Corruption(what + ": a content key without elements");
  }
  std::vector<std::string> out;
  for (const Json& e : *elements) {
    if (!e.is_string()) return Status::Corruption(what + ": a content key element is not a string");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// A key as Nessie writes it in a URI path (the legacy representation of NESSIE-SPEC-2-0:
// elements joined by '.'). Valid skade names hold no '.', '/' or '\\', so no element needs
// Nessie's escaping; each is percent-encoded. Keys with a '%' are not written in paths at all
// (the escaping representation only exists from spec 2.2.0 on): they are asked for by POST.
std::string KeyPath(const std::vector<std::string>& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) out += (i ? "." : "") + io::UriEncode(key[i]);
  return out;
}

bool StartsWith(const std::vector<std::string>& key, const std::vector<std::string>& prefix) {
  return key.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), key.begin());
}

std::string KeyText(const std::vector<std::string>& key) { return Dump(Json(key)); }

class NessieCatalog final : public internal::ReadOnlyCatalogBase {
 public:
  NessieCatalog(NessieCatalogOptions options, io::FileIO& io)
      : options_(std::move(options)), io_(io), http_(io::HttpClient::Make(options_.http)) {
    while (!options_.uri.empty() && options_.uri.back() == '/') options_.uri.pop_back();
  }

  // Resolves the reference once; every later call reads at ref_path_.
  Status Resolve() {
    SKADE_ASSIGN_OR_RETURN(RefSpec spec, ParseRef(options_.ref));
    if (!spec.name.empty()) {
      auto ref =
          Call("GET", "/trees/" + spec.name, "", "look up Nessie reference '" + spec.name + "'");
      if (ref.ok()) {
        const Json* reference = Member(*ref, "reference");
        const std::string type = reference ? StringMember(*reference, "type") : "";
        const std::string name = reference ? StringMember(*reference, "name") : "";
        if ((type != "BRANCH" && type != "TAG") || name.empty()) {
          return Status::Corruption("Nessie answered no branch or tag for reference '" + spec.name +
                                    "'");
        }
        std::string kind = type == "BRANCH" ? "branch" : "tag";
        if (spec.hash.empty()) {
          ref_path_ = name;
          described_ = kind + " " + name;
          return Status::Ok();
        }
        return PinCommit(name, spec.hash, " on " + kind + " " + name);
      }
      // A bare hash that could also be a name: it is a commit when no reference has that name.
      const StatusCode code = ref.status().code();
      if (!spec.ambiguous ||
          (code != StatusCode::kNotFound && code != StatusCode::kInvalidArgument)) {
        return ref.status();
      }
      spec.hash = spec.name;
    }
    return PinCommit("", spec.hash, "");
  }

  const std::string& name() const override { return options_.name; }
  const std::string& warehouse() const override { return options_.warehouse; }


  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override {
    std::vector<Entry> entries;
    if (parent.empty()) {
      SKADE_ASSIGN_OR_RETURN(entries, Entries("", "list the namespaces"));
    } else {
      SKADE_RETURN_IF_ERROR(parent.Validate());
      SKADE_ASSIGN_OR_RETURN(entries,
                             Subtree(parent, "list the namespaces of " + parent.ToString()));
      if (!Exists(parent, entries)) return NoNamespace(parent);
    }
    // Children: explicit NAMESPACE contents one level down, and the first level below
    // `parent` of any deeper key (implied namespaces, as in the JDBC catalog).
    std::set<Namespace> children;
    std::set<std::string> skipped;
    const size_t depth = parent.levels.size();
    for (const Entry& e : entries) {
      if (!StartsWith(e.key, parent.levels)) continue;
      const bool explicit_child = e.key.size() == depth + 1 && e.type == "NAMESPACE";
      if (!explicit_child && e.key.size() <= depth + 1) continue;
      Namespace child{std::vector<std::string>(
          e.key.begin(), e.key.begin() + static_cast<std::ptrdiff_t>(depth + 1))};
      if (!child.Validate().ok()) {
        if (skipped.insert(child.levels.back()).second) {
          SKADE_LOG_WARN(
              "nessie catalog {}: skipping namespace {} (a level skade cannot represent, e.g. one "
              "containing '.')",
              options_.name, KeyText(child.levels));
        }
        continue;
      }
      children.insert(std::move(child));
    }
    return std::vector<Namespace>(children.begin(), children.end());
  }

  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    const std::string what = "load namespace " + ns.ToString();
    SKADE_ASSIGN_OR_RETURN(std::optional<Json> content, Content(ns.levels, what));
    if (!content) {
      // No NAMESPACE content: an implied namespace has no properties.
      SKADE_ASSIGN_OR_RETURN(std::vector<Entry> entries, Subtree(ns, what));
      if (!Exists(ns, entries)) return NoNamespace(ns);
      return std::map<std::string, std::string>{};
    }
    const std::string type = StringMember(*content, "type");
    if (type != "NAMESPACE") {
      return Status::NotFound("namespace " + ns.ToString() + " does not exist at " + described_ +
                              " (the key is " + (type.empty() ? "another content" : "a " + type) +
                              ")");
    }
    std::map<std::string, std::string> out;
    if (const Json* props = Member(*content, "properties"); props && props->is_object()) {
      for (const auto& [k, v] : props->items()) {
        if (v.is_string()) out[k] = v.get<std::string>();
      }
    }
    return out;
  }



  Result<bool> NamespaceExists(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    SKADE_ASSIGN_OR_RETURN(std::vector<Entry> entries,
                           Subtree(ns, "check namespace " + ns.ToString()));
    return Exists(ns, entries);
  }

  Result<std::vector<TableIdent>> ListTables(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    SKADE_ASSIGN_OR_RETURN(std::vector<Entry> entries,
                           Subtree(ns, "list the tables of " + ns.ToString()));
    if (!Exists(ns, entries)) return NoNamespace(ns);
    std::vector<TableIdent> out;
    for (const Entry& e : entries) {
      if (e.type != "ICEBERG_TABLE" || e.key.size() != ns.levels.size() + 1 ||
          !StartsWith(e.key, ns.levels)) {
        continue;
      }
      TableIdent ident{ns, e.key.back()};
      if (!ident.Validate().ok()) {
        SKADE_LOG_WARN(
            "nessie catalog {}: skipping table {} (a name skade cannot represent, e.g. one "
            "containing '.')",
            options_.name, KeyText(e.key));
        continue;
      }
      out.push_back(std::move(ident));
    }
    std::sort(out.begin(), out.end());
    return out;
  }


  Result<TableState> LoadTable(const TableIdent& ident) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    const std::string what = "load table " + ident.ToString();
    std::vector<std::string> key = ident.ns.levels;
    key.push_back(ident.name);
    SKADE_ASSIGN_OR_RETURN(std::optional<Json> content, Content(key, what));
    if (!content)
      return Status::NotFound("table " + ident.ToString() + " does not exist at " + described_);
    const std::string type = StringMember(*content, "type");
    if (type != "ICEBERG_TABLE") {
      return Status::NotFound("table " + ident.ToString() + " does not exist at " + described_ +
                              " (the key is " + (type.empty() ? "another content" : "a " + type) +
                              ", not an Iceberg table)");
    }
    TableState state;
    state.ident = ident;
    state.metadata_location = StringMember(*content, "metadataLocation");
    if (state.metadata_location.empty()) {
      return Status::Corruption(what + ": Nessie's IcebergTable content has no metadataLocation");
    }
    auto bytes = io_.Read(state.metadata_location);
    if (!bytes.ok()) return bytes.status().WithContext(what + ": read " + state.metadata_location);
    auto parsed = iceberg::ParseTableMetadataFile(*bytes);
    if (!parsed.ok()) return parsed.status().WithContext(what + ": " + state.metadata_location);
    state.metadata = std::make_shared<const iceberg::TableMetadata>(std::move(*parsed));
    return state;
  }


  // TODO(#13): change detection over Nessie polls the metadata locations instead.
  Result<std::vector<CommitLogEntry>> CommitsSince(int64_t, int64_t) override {
    return NoCommitLog();
  }
  Result<int64_t> LatestCommitSeq() override { return NoCommitLog(); }

 private:
  std::string Refusal() const override { return "skade opens Nessie catalogs read-only (" + described_ + ")"; }
  static Status NoCommitLog() {
    return Status::NotImplemented(
        "a Nessie catalog has no commit log skade can read (commit_seq is skade's own)");
  }
  Status NoNamespace(const Namespace& ns) const {
    return Status::NotFound("namespace " + ns.ToString() + " does not exist at " + described_);
  }

  std::string TreePath() const { return "/trees/" + ref_path_; }

  // Pins a commit: reads one entry at it (so a commit that does not exist fails now) and takes
  // the full hash from the answer's effectiveReference (an abbreviated hash stays valid).
  Status PinCommit(const std::string& name, const std::string& hash, const std::string& on) {
    ref_path_ = name + "@" + hash;
    const std::string what = "look up Nessie commit " + hash + on;
    auto page = Call("GET", TreePath() + "/entries?max-records=1", "", what);
    if (!page.ok()) {
      if (page.status().code() == StatusCode::kNotFound) {
        return Status::NotFound("Nessie commit " + hash + on +
                                " does not exist: " + page.status().message());
      }
      return page.status();
    }
    if (const Json* effective = Member(*page, "effectiveReference")) {
      const std::string full = StringMember(*effective, "hash");
      if (IsHash(full) && full.compare(0, hash.size(), hash) == 0) ref_path_ = name + "@" + full;
    }
    described_ = "commit " + ref_path_.substr(ref_path_.find('@') + 1) + on;
    return Status::Ok();
  }

  // The entries of every page of GET /trees/{ref}/entries (filter: a CEL expression, or none).
  Result<std::vector<Entry>> Entries(const std::string& filter, const std::string& what) {
    std::vector<Entry> out;
    std::string token;
    std::set<std::string> tokens;
    for (int page = 0; page < kMaxPages; ++page) {
      std::string query;
      auto add = [&](const char* key, const std::string& value) {
        query += (query.empty() ? "?" : "&") + std::string(key) + "=" + io::UriEncode(value);
      };
      if (!filter.empty()) add("filter", filter);
      if (options_.page_size > 0) add("max-records", std::to_string(options_.page_size));
      if (!token.empty()) add("page-token", token);
      SKADE_ASSIGN_OR_RETURN(Json body, Call("GET", TreePath() + "/entries" + query, "", what));
      const Json* entries = Member(body, "entries");
      if (entries == nullptr || !entries->is_array())
        return Status::Corruption(what + ": the answer has no entries array");
      for (const Json& e : *entries) {
        const Json* name = Member(e, "name");
        if (name == nullptr) return Status::Corruption(what + ": an entry without a name");
        Entry entry;
        SKADE_ASSIGN_OR_RETURN(entry.key, KeyElements(*name, what));
        entry.type = StringMember(e, "type");
        out.push_back(std::move(entry));
      }
      const Json* more = Member(body, "hasMore");
      if (more == nullptr || !more->is_boolean() || !more->get<bool>()) return out;
      token = StringMember(body, "token");
      if (token.empty()) return Status::Corruption(what + ": hasMore without a paging token");
      if (!tokens.insert(token).second)
        return Status::Corruption(what + ": the server repeated a paging token");
    }
    return Status::Corruption(what + ": too many pages");
  }

  // The entries that decide about `ns`: the NAMESPACE contents beside it (its own explicit one
  // among them) and every key below it. The filter narrows what the server sends; the callers
  // match keys themselves, so a server that ignores it is still answered correctly.
  Result<std::vector<Entry>> Subtree(const Namespace& ns, const std::string& what) {
    const std::string dotted = ns.ToString();
    std::string parent;
    for (size_t i = 0; i + 1 < ns.levels.size(); ++i) parent += (i ? "." : "") + ns.levels[i];
    const std::string filter =
        "(entry.namespace == " + CelString(parent) +
        " && entry.contentType == 'NAMESPACE') || entry.namespace == " + CelString(dotted) +
        " || entry.namespace.startsWith(" + CelString(dotted + ".") + ")";
    return Entries(filter, what);
  }

  // Whether `ns` exists: its own NAMESPACE content, or any key below it (implied).
  static bool Exists(const Namespace& ns, const std::vector<Entry>& entries) {
    for (const Entry& e : entries) {
      if (!StartsWith(e.key, ns.levels)) continue;
      if (e.key.size() > ns.levels.size() || e.type == "NAMESPACE") return true;
    }
    return false;
  }

  // The content object at `key`, or nullopt when the reference holds none there. GET
  // /trees/{ref}/contents/{key}, or POST /trees/{ref}/contents for a key that cannot be
  // written plainly in a path.
  Result<std::optional<Json>> Content(const std::vector<std::string>& key,
                                      const std::string& what) {
    const bool in_path = std::none_of(key.begin(), key.end(), [](const std::string& e) {
      return e.find('%') != std::string::npos;
    });
    if (!in_path) {
      Json request{{"requestedKeys", Json::array({Json{{"elements", key}}})}};
      SKADE_ASSIGN_OR_RETURN(Json body,
                             Call("POST", TreePath() + "/contents", Dump(request), what));
      const Json* contents = Member(body, "contents");
      if (contents == nullptr || !contents->is_array())
        return Status::Corruption(what + ": the answer has no contents array");
      for (const Json& c : *contents) {
        const Json* k = Member(c, "key");
        const Json* content = Member(c, "content");
        if (k == nullptr || content == nullptr)
          return Status::Corruption(what + ": a content without key or value");
        SKADE_ASSIGN_OR_RETURN(std::vector<std::string> elements, KeyElements(*k, what));
        if (elements == key) return std::optional<Json>(*content);
      }
      return std::optional<Json>();
    }
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r,
                           Send("GET", TreePath() + "/contents/" + KeyPath(key), "", what));
    if (r.status == 404) {
      NessieError e = ErrorBody(r);
      // The reference itself gone (a branch deleted since opening) is an error, not an absent key.
      if (e.code == "REFERENCE_NOT_FOUND") return StatusOf(e, what + " at " + described_);
      return std::optional<Json>();
    }
    if (r.status < 200 || r.status >= 300) return StatusOf(ErrorBody(r), what);
    SKADE_ASSIGN_OR_RETURN(Json body, ParseBody(r, what));
    const Json* content = Member(body, "content");
    if (content == nullptr || !content->is_object())
      return Status::Corruption(what + ": the answer has no content");
    return std::optional<Json>(*content);
  }

  static Result<Json> ParseBody(const io::HttpResponse& r, const std::string& what) {
    auto parsed = ParseOrderedJson(r.body, what + ": Nessie's answer");
    if (!parsed.ok()) return Status::Corruption(parsed.status().message());
    Json body = std::move(parsed).value();
    if (!body.is_object())
      return Status::Corruption(what + ": Nessie's answer is not a JSON object");
    return body;
  }

  // Sends and maps a non-2xx answer to a status; the JSON object of a 2xx.
  Result<Json> Call(const std::string& method, const std::string& path, const std::string& body,
                    const std::string& what) {
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, Send(method, path, body, what));
    if (r.status < 200 || r.status >= 300) return StatusOf(ErrorBody(r), what);
    return ParseBody(r, what);
  }

  Result<io::HttpResponse> Send(const std::string& method, const std::string& path,
                                const std::string& body, const std::string& what) {
    io::HttpRequest req;
    req.method = method;
    req.url = options_.uri + path;
    req.body = body;
    req.timeout = options_.timeout;
    // Every request is a read, including the POST that fetches several contents.
    req.retry = io::RetryMode::kAlways;
    for (const auto& [k, v] : options_.headers) req.headers.Set(k, v);
    req.headers.Set("Accept", "application/json");
    if (!body.empty()) req.headers.Set("Content-Type", "application/json");
    if (!options_.token.empty()) req.headers.Set("Authorization", "Bearer " + options_.token);
    auto r = http_->Send(req);
    if (!r.ok()) return r.status().WithContext(what);
    return std::move(*r);
  }

  NessieCatalogOptions options_;
  io::FileIO& io_;
  std::unique_ptr<io::HttpClient> http_;
  // Set once by Resolve: the reference as written in paths ("main", "main@<hash>", "@<hash>")
  // and as named in messages ("branch main", "commit <hash> on branch main").
  std::string ref_path_;
  std::string described_;
};


}  // namespace

Result<NessieCatalogOptions> ParseNessieCatalogUri(std::string_view uri) {
  NessieCatalogOptions o;
  if (uri.rfind("nessie+http://", 0) != 0 && uri.rfind("nessie+https://", 0) != 0) {
    return Status::InvalidArgument(
        "a Nessie catalog URI starts with nessie+http:// or nessie+https://, not '" +
        std::string(uri.substr(0, uri.find(':'))) + "'");
  }
  std::string_view rest = uri.substr(7);
  const size_t q = rest.find('?');
  o.uri = std::string(rest.substr(0, q));
  while (!o.uri.empty() && o.uri.back() == '/') o.uri.pop_back();
  if (o.uri.size() >= 3 && o.uri.compare(o.uri.size() - 3, 3, "/v1") == 0) {
    return Status::InvalidArgument(
        "Nessie's API v1 is not supported: point the URI at the API v2 root (…/api/v2)");
  }
  if (q != std::string_view::npos) {
    for (const auto& [key, value] : ParseQueryString(rest.substr(q + 1))) {
      if (key == "ref") {
        o.ref = value.empty() ? "-" : value;
      } else if (key == "token") {
        o.token = value;
      } else if (key == "name") {
        o.name = value;
      } else if (key == "warehouse") {
        o.warehouse = value;
      } else if (!key.empty()) {
        return Status::InvalidArgument("unknown Nessie catalog URI parameter '" + key +
                                       "' (known: ref, token, name, warehouse)");
      }
    }
  }
  SKADE_RETURN_IF_ERROR(ParseRef(o.ref).status());
  if (o.token.empty()) {
    if (const char* t = std::getenv("SKADE_NESSIE_TOKEN")) o.token = t;
  }
  return o;
}

Result<std::unique_ptr<Catalog>> OpenNessieCatalog(NessieCatalogOptions options, io::FileIO& io) {
  if (options.uri.rfind("http://", 0) != 0 && options.uri.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("the Nessie catalog URI must be http:// or https://, not '" +
                                   options.uri + "'");
  }
  auto catalog = std::make_unique<NessieCatalog>(std::move(options), io);
  SKADE_RETURN_IF_ERROR(catalog->Resolve());
  return std::unique_ptr<Catalog>(std::move(catalog));
}

}  // namespace skade::catalog
