// NessieCatalog: a read-only Catalog over a Nessie server's API v2 (Nessie's OpenAPI in
// shared/fixtures/openapi/): one reference (branch, tag or commit hash) pins every read, keys
// become namespaces and tables, IcebergTable contents point at the metadata files it loads.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"
#include "skade/io/http_client.h"

namespace skade::catalog {

struct NessieCatalogOptions {
  // The API v2 root ("http://host:19120/api/v2"); routes are <uri>/trees/….
  std::string uri;
  // What every call reads at: "-" (the default branch), a branch or tag name, "name@hash" (that
  // commit, checked to be reachable from the named reference) or a commit hash ("@hash", or a
  // bare hash of 8–64 hex digits that names no reference).
  std::string ref = "-";
  // A static bearer token (Authorization: Bearer …); none when empty.
  std::string token;
  // Extra headers on every request.
  std::map<std::string, std::string> headers;
  // The catalog name (Catalog::name()) and the warehouse reported by warehouse(): Nessie's API v2
  // has neither, so they are whatever the caller says.
  std::string name = "nessie";
  std::string warehouse;
  // A hint for the entries per page (max-records); 0 leaves it to the server.
  int page_size = 0;
  io::HttpClientOptions http;
  std::chrono::milliseconds timeout{60'000};
};

// Parses "nessie+http://host:port/api/v2?ref=R&token=T&name=N&warehouse=W" (also
// nessie+https://) into options; the token may instead come from SKADE_NESSIE_TOKEN so it stays
// out of command lines. kInvalidArgument for another scheme, an unknown query key, an API v1
// path or a malformed ref.
Result<NessieCatalogOptions> ParseNessieCatalogUri(std::string_view uri);

// Connects and resolves the reference once (GET /trees/{ref}; a hash is checked by reading one
// entry at it), so a reference or commit that does not exist fails here with kNotFound naming
// it. With a branch or tag every later call reads its current head (new commits are seen);
// with a hash nothing ever changes. `io` reads the metadata files and must outlive the catalog.
//
// Errors: kUnavailable when the server cannot be reached or answers 5xx/429 (after the HTTP
// client's retries), kUnauthorized (401), kPermissionDenied (403), kNotFound (404:
// REFERENCE_NOT_FOUND, CONTENT_NOT_FOUND…), kInvalidArgument (400), kCorruption for an answer
// that is not Nessie's JSON. Every change (namespaces, tables, commits) is kPermissionDenied
// before any request: skade never writes to Nessie. Nessie has no commit log skade can read,
// so CommitsSince and LatestCommitSeq are kNotImplemented. Keys with an element skade cannot
// represent (containing '.', '/', '\\', a control character…) are left out of listings with
// one log line each. Thread-safe: the resolved reference never changes after opening.
Result<std::unique_ptr<Catalog>> OpenNessieCatalog(NessieCatalogOptions options, io::FileIO& io);

}  // namespace skade::catalog
