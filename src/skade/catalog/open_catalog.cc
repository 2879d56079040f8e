#include "skade/catalog/open_catalog.h"

#include "skade/catalog/file_catalog.h"
#include "skade/catalog/nessie_catalog.h"
#include "skade/catalog/read_only_internal.h"
#include "skade/catalog/rest_catalog.h"
#include "skade/io/location.h"

namespace skade::catalog {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

class ReadOnlyCatalog final : public internal::ReadOnlyCatalogBase {
 public:
  explicit ReadOnlyCatalog(std::unique_ptr<Catalog> inner) : inner_(std::move(inner)) {}

  const std::string& name() const override { return inner_->name(); }
  const std::string& warehouse() const override { return inner_->warehouse(); }
  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override { return inner_->ListNamespaces(parent); }
  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) override {
    return inner_->LoadNamespaceProperties(ns);
  }
  Result<bool> NamespaceExists(const Namespace& ns) override { return inner_->NamespaceExists(ns); }
  Result<std::vector<TableIdent>> ListTables(const Namespace& ns) override { return inner_->ListTables(ns); }
  Result<std::vector<TablePointer>> ListTablePointers(const Namespace& ns) override {
    return inner_->ListTablePointers(ns);
  }
  Result<TableState> LoadTable(const TableIdent& ident) override { return inner_->LoadTable(ident); }
  bool SupportsViews() const override { return inner_->SupportsViews(); }
  Result<std::vector<TableIdent>> ListViews(const Namespace& ns) override { return inner_->ListViews(ns); }
  Result<ViewState> LoadView(const TableIdent& ident) override { return inner_->LoadView(ident); }
  Result<std::vector<TableLocation>> ListTableLocations() override { return inner_->ListTableLocations(); }
  Result<std::vector<CommitLogEntry>> CommitsSince(int64_t after_seq, int64_t limit) override {
    return inner_->CommitsSince(after_seq, limit);
  }
  Result<int64_t> LatestCommitSeq() override { return inner_->LatestCommitSeq(); }
  // A consumer's cursor changes no table: it passes through.
  Result<std::optional<int64_t>> LoadConsumerCursor(const std::string& consumer) override {
    return inner_->LoadConsumerCursor(consumer);
  }
  Status StoreConsumerCursor(const std::string& consumer, int64_t commit_seq) override {
    return inner_->StoreConsumerCursor(consumer, commit_seq);
  }
  // Server state (a Flight SQL server's bound parameters, closes and cancels) changes no table
  // either.
  bool KeepsServerState() const override { return inner_->KeepsServerState(); }
  Status PutServerState(const ServerStateRecord& record, int64_t max_scope_bytes) override {
    return inner_->PutServerState(record, max_scope_bytes);
  }
  Result<std::optional<ServerStateRecord>> GetServerState(const std::string& kind, const std::string& scope,
                                                          const std::string& key, int64_t now_us) override {
    return inner_->GetServerState(kind, scope, key, now_us);
  }
  Status DeleteServerState(const std::string& kind, const std::string& scope, const std::string& key) override {
    return inner_->DeleteServerState(kind, scope, key);
  }
  Result<int64_t> PurgeServerState(int64_t now_us) override { return inner_->PurgeServerState(now_us); }
  void SetCommitListener(CommitListener listener) override { inner_->SetCommitListener(std::move(listener)); }

 private:
  std::string Refusal() const override { return "the catalog is open read-only"; }
  std::unique_ptr<Catalog> inner_;
};

}  // namespace

Result<std::string> DefaultCatalogUri(std::string_view warehouse) {
  const std::string normal = io::NormalizeLocation(warehouse);
  if (io::IsObjectStoreLocation(normal)) {
    return Status::InvalidArgument("warehouse " + normal +
                                   " is on object storage, where a SQLite catalog cannot live: name the catalog "
                                   "(sqlite:///PATH/catalog.db, a local file, or postgresql://…)");
  }
  return "sqlite://" + io::JoinLocation(normal, "catalog.db");
}

Result<CatalogKind> CatalogKindOf(std::string_view uri) {
  if (StartsWith(uri, "rest+http://") || StartsWith(uri, "rest+https://")) return CatalogKind::kRest;
  if (StartsWith(uri, "nessie+http://") || StartsWith(uri, "nessie+https://")) return CatalogKind::kNessie;
  if (StartsWith(uri, "file:") || StartsWith(uri, "s3://") || StartsWith(uri, "s3a://") || StartsWith(uri, "s3n://")) {
    return CatalogKind::kFile;
  }
  if (StartsWith(uri, "sqlite://") || StartsWith(uri, "postgresql://") || StartsWith(uri, "postgres://")) {
    return CatalogKind::kSql;
  }
  // A plain path names a SQLite file.
  if (!uri.empty() && uri.find("://") == std::string_view::npos) return CatalogKind::kSql;
  // Only the scheme is quoted: the rest of a URI may carry credentials.
  return Status::InvalidArgument("unknown catalog URI scheme '" + std::string(uri.substr(0, uri.find("://"))) +
                                 "': use sqlite://PATH, postgresql://…, rest+http(s)://HOST:PORT/… or "
                                 "nessie+http(s)://HOST:PORT/api/v2?ref=…, or a folder of tables file:///PATH, s3://BUCKET/PREFIX");
}

bool CatalogTakesWrites(CatalogKind kind) { return kind == CatalogKind::kSql || kind == CatalogKind::kRest; }

namespace {

Result<std::unique_ptr<Catalog>> OpenByKind(CatalogKind kind, const SqlCatalogOptions& sql, io::FileIO& io) {
  switch (kind) {
    case CatalogKind::kSql: return OpenSqlCatalog(sql, io);
    case CatalogKind::kNessie: {
      // Read-only whatever sql.access says: the connector refuses every change itself.
      SKADE_ASSIGN_OR_RETURN(NessieCatalogOptions options, ParseNessieCatalogUri(sql.uri));
      if (options.name == NessieCatalogOptions().name) options.name = sql.catalog_name;
      if (options.warehouse.empty()) options.warehouse = sql.warehouse;
      return OpenNessieCatalog(std::move(options), io);
    }
    case CatalogKind::kFile: {
      FileCatalogOptions options;
      options.root = sql.uri;
      options.name = sql.catalog_name;
      return OpenFileCatalog(std::move(options), io);
    }
    case CatalogKind::kRest: break;
  }
  SKADE_ASSIGN_OR_RETURN(RestCatalogOptions options, ParseRestCatalogUri(sql.uri));
  if (options.name == "rest") options.name = sql.catalog_name;
  if (options.warehouse.empty() && !sql.warehouse.empty()) options.warehouse = sql.warehouse;
  options.storage = &io;  // vended credentials reach the FileIO the tables are read through
  SKADE_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, OpenRestCatalog(std::move(options)));
  if (sql.access == SqlCatalogOptions::Access::kReadOnly) return MakeReadOnlyCatalog(std::move(catalog));
  return catalog;
}

}  // namespace

Result<std::unique_ptr<Catalog>> OpenCatalog(const SqlCatalogOptions& sql, io::FileIO& io, const PolledLogOptions* poll) {
  SKADE_ASSIGN_OR_RETURN(CatalogKind kind, CatalogKindOf(sql.uri));
  SKADE_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, OpenByKind(kind, sql, io));
  if (poll == nullptr) return catalog;
  auto head = catalog->LatestCommitSeq();
  if (head.ok() || head.status().code() != StatusCode::kNotImplemented) return catalog;
  return WithPolledCommitLog(std::move(catalog), *poll);
}

std::unique_ptr<Catalog> MakeReadOnlyCatalog(std::unique_ptr<Catalog> inner) {
  return std::make_unique<ReadOnlyCatalog>(std::move(inner));
}

}  // namespace skade::catalog
