#include "skade/catalog/file_catalog.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "skade/base/log.h"
#include "skade/catalog/read_only_internal.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/version_hint.h"
#include "skade/io/location.h"

namespace skade::catalog {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

class FileCatalog final : public internal::ReadOnlyCatalogBase {
 public:
  FileCatalog(FileCatalogOptions options, io::FileIO& io) : options_(std::move(options)), io_(io) {
    if (!io::IsObjectStoreLocation(options_.root)) {
      // The form a local listing answers in.
      std::error_code ec;
      options_.root = std::filesystem::absolute(io::LocalPath(options_.root), ec).lexically_normal().string();
    }
    while (options_.root.size() > 1 && options_.root.back() == '/') options_.root.pop_back();
  }

  // Lists the root once, so a missing root fails at open.
  Status Check() {
    SKADE_ASSIGN_OR_RETURN(auto listing, Listing());
    if (listing->tables.empty() && listing->files == 0) {
      return Status::NotFound("no tables under " + options_.root + " (the folder is empty or missing)");
    }
    return Status::Ok();
  }

  const std::string& name() const override { return options_.name; }
  const std::string& warehouse() const override { return options_.root; }

  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override {
    SKADE_ASSIGN_OR_RETURN(auto listing, Listing());
    if (!parent.empty() && !Exists(*listing, parent)) {
      return Status::NotFound("namespace " + parent.ToString() + " does not exist under " + options_.root);
    }
    std::set<std::vector<std::string>> children;
    for (const auto& [ident, dir] : listing->tables) {
      const auto& levels = ident.ns.levels;
      if (levels.size() <= parent.levels.size() || !std::equal(parent.levels.begin(), parent.levels.end(), levels.begin())) {
        continue;
      }
      children.insert(std::vector<std::string>(levels.begin(), levels.begin() + static_cast<long>(parent.levels.size()) + 1));
    }
    std::vector<Namespace> out;
    for (const auto& c : children) out.push_back(Namespace{c});
    return out;
  }
  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) override {
    SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExists(ns));
    if (!exists) return Status::NotFound("namespace " + ns.ToString() + " does not exist under " + options_.root);
    return std::map<std::string, std::string>{{"location", options_.root + "/" + Join(ns.levels, "/")}};
  }
  Result<bool> NamespaceExists(const Namespace& ns) override {
    SKADE_ASSIGN_OR_RETURN(auto listing, Listing());
    return Exists(*listing, ns);
  }
  Result<std::vector<TableIdent>> ListTables(const Namespace& ns) override {
    SKADE_ASSIGN_OR_RETURN(auto listing, Listing());
    if (!Exists(*listing, ns)) return Status::NotFound("namespace " + ns.ToString() + " does not exist under " + options_.root);
    std::vector<TableIdent> out;
    for (const auto& [ident, dir] : listing->tables) {
      if (ident.ns == ns) out.push_back(ident);
    }
    return out;
  }
  Result<TableState> LoadTable(const TableIdent& ident) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    // The folder of a table follows from its name; a table made after the last listing loads too.
    const std::string dir = options_.root + "/" + Join(ident.ns.levels, "/") + "/" + ident.name;
    auto file = iceberg::ResolveMetadataFile(io_, dir);
    if (!file.ok()) {
      if (file.status().code() == StatusCode::kNotFound) return Status::NotFound("table " + ident.ToString() + " does not exist (no metadata in " + dir + ")");
      return file.status();
    }
    SKADE_ASSIGN_OR_RETURN(std::string bytes, io_.Read(*file));
    SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadata metadata, iceberg::ParseTableMetadataFile(bytes).WithContext(*file));
    TableState state;
    state.ident = ident;
    state.metadata_location = *file;
    state.metadata = std::make_shared<const iceberg::TableMetadata>(std::move(metadata));
    return state;
  }
  Result<std::vector<CommitLogEntry>> CommitsSince(int64_t, int64_t) override { return NoLog(); }
  Result<int64_t> LatestCommitSeq() override { return NoLog(); }

 private:
  struct Listed {
    std::map<TableIdent, std::string> tables;  // → table folder
    size_t files = 0;
    std::chrono::steady_clock::time_point at;
  };

  static std::string Join(const std::vector<std::string>& parts, const char* sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
  }
  static bool Exists(const Listed& l, const Namespace& ns) {
    return std::any_of(l.tables.begin(), l.tables.end(), [&](const auto& t) { return ns.Contains(t.first.ns); });
  }
  std::string Refusal() const override { return options_.root + " is a read-only folder of tables"; }
  Status NoLog() const {
    return Status::NotImplemented("a folder of tables (" + options_.root + ") keeps no commit log");
  }

  Result<std::shared_ptr<const Listed>> Listing() {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (listed_ && now - listed_->at < options_.listing_ttl) return listed_;
    SKADE_ASSIGN_OR_RETURN(std::vector<io::FileInfo> files, io_.List(options_.root));
    auto l = std::make_shared<Listed>();
    l->files = files.size();
    l->at = now;
    std::set<std::string> dirs;
    for (const auto& f : files) {
      const std::string& loc = f.location;
      const size_t meta = loc.rfind("/metadata/");
      if (meta == std::string::npos) continue;
      const std::string_view file = std::string_view(loc).substr(meta + 10);
      if (file.find('/') != std::string_view::npos) continue;
      if (file != "version-hint.text" && !EndsWith(file, ".metadata.json") && !EndsWith(file, ".metadata.json.gz")) continue;
      dirs.insert(loc.substr(0, meta));
    }
    const std::string prefix = options_.root + "/";
    for (const std::string& dir : dirs) {
      if (dir.compare(0, prefix.size(), prefix) != 0) continue;
      std::vector<std::string> parts;
      std::string_view rest = std::string_view(dir).substr(prefix.size());
      for (size_t pos = 0; pos <= rest.size();) {
        const size_t slash = std::min(rest.find('/', pos), rest.size());
        parts.emplace_back(rest.substr(pos, slash - pos));
        pos = slash + 1;
      }
      // A table's own folder may hold another table's (a table inside a table is not one).
      if (parts.size() < 2) {
        LogSkip(dir, "a table directly under the root has no namespace");
        continue;
      }
      TableIdent ident;
      ident.name = parts.back();
      parts.pop_back();
      ident.ns.levels = std::move(parts);
      if (Status st = ident.Validate(); !st.ok()) {
        LogSkip(dir, st.message());
        continue;
      }
      l->tables.emplace(std::move(ident), dir);
    }
    // A folder that is a table cannot also be a namespace of others: drop nested ones.
    for (auto it = l->tables.begin(); it != l->tables.end();) {
      TableIdent as_ns_parent = it->first;
      bool nested = false;
      for (size_t n = 1; n <= as_ns_parent.ns.levels.size() && !nested; ++n) {
        TableIdent outer;
        outer.ns.levels.assign(as_ns_parent.ns.levels.begin(), as_ns_parent.ns.levels.begin() + static_cast<long>(n) - 1);
        outer.name = as_ns_parent.ns.levels[n - 1];
        nested = !outer.ns.empty() && l->tables.count(outer) > 0;
      }
      if (nested) {
        LogSkip(it->second, "it lies inside another table's folder");
        it = l->tables.erase(it);
      } else {
        ++it;
      }
    }
    listed_ = l;
    return listed_;
  }

  void LogSkip(const std::string& dir, const std::string& why) {
    if (skipped_.insert(dir).second) SKADE_LOG_WARN("file catalog: skipping the table at {}: {}", dir, why);
  }

  FileCatalogOptions options_;
  io::FileIO& io_;
  std::mutex mu_;
  std::shared_ptr<const Listed> listed_;
  std::set<std::string> skipped_;
};

}  // namespace

Result<std::unique_ptr<Catalog>> OpenFileCatalog(FileCatalogOptions options, io::FileIO& io) {
  auto catalog = std::make_unique<FileCatalog>(std::move(options), io);
  SKADE_RETURN_IF_ERROR(catalog->Check());
  return std::unique_ptr<Catalog>(std::move(catalog));
}

}  // namespace skade::catalog
