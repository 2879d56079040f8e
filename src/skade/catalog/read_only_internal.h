// Private to skade/catalog: the refusals of a catalog skade reads but does not change (a
// read-only view of another catalog, Nessie, a folder of tables). Each change answers
// kPermissionDenied with Refusal's text for the operation.
#pragma once

#include <string>

#include "skade/catalog/catalog.h"

namespace skade::catalog::internal {

class ReadOnlyCatalogBase : public Catalog {
 public:
  Status CreateNamespace(const Namespace& ns, const std::map<std::string, std::string>&) override {
    return Refuse("create namespace " + ns.ToString());
  }
  Status UpdateNamespaceProperties(const Namespace& ns, const std::map<std::string, std::string>&,
                                   const std::vector<std::string>&) override {
    return Refuse("update the properties of namespace " + ns.ToString());
  }
  Status DropNamespace(const Namespace& ns) override { return Refuse("drop namespace " + ns.ToString()); }
  Result<CommitResult> CreateTable(const TableIdent& ident, const CreateTableRequest&) override {
    return Refuse("create table " + ident.ToString());
  }
  Status DropTable(const TableIdent& ident, DropMode, const std::optional<std::string>&) override {
    return Refuse("drop table " + ident.ToString());
  }
  Result<ViewState> CreateView(const TableIdent& ident, const CreateViewRequest&) override {
    return Refuse("create view " + ident.ToString());
  }
  Result<ViewState> CommitView(const ViewCommit& commit) override {
    return Refuse("replace view " + commit.ident.ToString());
  }
  Status DropView(const TableIdent& ident) override { return Refuse("drop view " + ident.ToString()); }
  Status RenameView(const TableIdent& from, const TableIdent&) override {
    return Refuse("rename view " + from.ToString());
  }
  Result<ViewState> RegisterView(const TableIdent& ident, const std::string&) override {
    return Refuse("register view " + ident.ToString());
  }
  Status RenameTable(const TableIdent& from, const TableIdent&) override {
    return Refuse("rename table " + from.ToString());
  }
  Result<CommitResult> RegisterTable(const TableIdent& ident, const std::string&) override {
    return Refuse("register table " + ident.ToString());
  }
  Result<CommitResult> CommitTable(const TableCommit& commit) override {
    return Refuse("commit to table " + commit.ident.ToString());
  }
  Result<std::vector<CommitResult>> CommitTransaction(const std::vector<TableCommit>&) override {
    return Refuse("commit a transaction");
  }

 protected:
  // Why this catalog is read-only, after "cannot <operation>: ".
  virtual std::string Refusal() const = 0;

 private:
  Status Refuse(const std::string& what) const {
    return Status(StatusCode::kPermissionDenied, "cannot " + what + ": " + Refusal());
  }
};

}  // namespace skade::catalog::internal
