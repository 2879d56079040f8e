// FileCatalog: the tables under a folder or object-store prefix in the Hadoop/file-system layout
// (each table a folder with metadata/version-hint.text or metadata/*.metadata.json), found by
// listing — a read-only catalog for lakes that have no catalog service. The folders between the
// root and a table are its namespace (root/sales/eu/orders → sales.eu.orders); a table folder
// directly under the root, or one whose path is not a valid namespace and name, is skipped with
// one log line. The current metadata file is the one version-hint.text names, else the highest
// version (iceberg::ResolveMetadataFile); a writer that moves the hint after its commit (skade
// does, beside the commit) is seen once it has.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"

namespace skade::catalog {

struct FileCatalogOptions {
  std::string root;  // "/lake", "file:///lake" or "s3://bucket/prefix"
  std::string name = "files";
  // Listings are reused this long (a listing of a large prefix is many requests).
  std::chrono::milliseconds listing_ttl{5000};
};

// Every change is kPermissionDenied; the commit log calls are kNotImplemented (wrap it with
// WithPolledCommitLog for commit events). kNotFound when the root does not exist or holds no
// files. `io` must outlive the catalog.
Result<std::unique_ptr<Catalog>> OpenFileCatalog(FileCatalogOptions options, io::FileIO& io);

}  // namespace skade::catalog
