// RestCatalog: a Catalog over any Iceberg REST catalog server (the REST OpenAPI in
// shared/fixtures/openapi/): config negotiation (defaults, overrides, prefix, endpoints),
// OAuth2 client credentials with token refresh or a static bearer token, paged listings,
// nested namespaces, ETag-cached table loads, commits and multi-table transactions as the
// spec's requirements and updates, and the error model mapped onto skade's status codes.
// Servers that serve the change feed (skade's: POST /v1/{prefix}/events with commit_seq
// tokens) also give it a commit log; other servers have none (kNotImplemented).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"
#include "skade/io/http_client.h"

namespace skade::catalog {

struct RestCatalogOptions {
  // The server's root ("http://host:8181", "https://host/api/catalog"); routes are <uri>/v1/….
  std::string uri;
  // Sent to /v1/config as ?warehouse= (servers that host several warehouses pick one by it).
  std::string warehouse;
  // Authentication: a static bearer token, or OAuth2 client credentials ("client_id:secret",
  // or a bare secret) exchanged at `oauth2_server_uri` (default <uri>/v1/oauth/tokens) for
  // tokens that are renewed before they expire and once more after a 401.
  std::string token;
  std::string credential;
  std::string oauth2_server_uri;
  std::string scope = "catalog";
  // Extra headers on every request (e.g. a tenant header some servers need).
  std::map<std::string, std::string> headers;
  // The catalog name (Catalog::name(): the SQL catalog of Flight SQL and lineage names).
  std::string name = "rest";
  io::HttpClientOptions http;
  std::chrono::milliseconds timeout{60'000};
  // Receives the storage settings tables vend (loadTable `config`, `storage-credentials`; the
  // request asks for them with X-Iceberg-Access-Delegation: vended-credentials) through
  // FileIO::ApplyStorageConfig; borrowed, must outlive the catalog. Null: they are ignored.
  io::FileIO* storage = nullptr;
};

// Parses "rest+http://host:port/path?warehouse=W&credential=ID:SECRET&token=T&prefix=P" (also
// rest+https://) into options; the credential and token may instead come from the environment
// (SKADE_REST_CREDENTIAL, SKADE_REST_TOKEN) so they stay out of command lines.
// kInvalidArgument for another scheme or an unknown query key.
Result<RestCatalogOptions> ParseRestCatalogUri(std::string_view uri);

// Connects: fetches a token when a credential is given, then /v1/config. kUnavailable when
// the server cannot be reached, kUnauthorized / kPermissionDenied when it refuses, kCorruption
// when it answers something that is not the spec's JSON.
//
// Errors of the catalog's calls follow the error model: 400 kInvalidArgument, 401/419
// kUnauthorized, 403 kPermissionDenied, 404 kNotFound, 406 kNotImplemented, 409 kAlreadyExists
// or kConflict (CommitFailedException, NamespaceNotEmptyException), 503 kUnavailable. A
// commit whose answer is a 5xx other than 503, or that got no answer at all, is
// kCommitUnknown: the server may have applied it. Commits are never resent by the client.
// Tables load with the ETag of the last answer (If-None-Match), so an unchanged table costs a
// 304. Transactions answer the tables as loaded right after the commit (the spec's
// transaction response has no bodies), with commit_seq 0 as for every REST commit.
Result<std::unique_ptr<Catalog>> OpenRestCatalog(RestCatalogOptions options);

}  // namespace skade::catalog
