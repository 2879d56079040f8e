// Where OpenLineage events go (DESIGN §9): an HTTP endpoint (Marquez `/api/v1/lineage`,
// OpenMetadata's OpenLineage endpoint), a file of JSON lines, or the console. A transport sends
// one event per call and reports whether it was delivered; retrying is the emitter's job, so a
// transport never sleeps.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"

namespace skade::lineage {

class Transport {
 public:
  virtual ~Transport() = default;
  // Delivers one event (a JSON object, no newline). kUnavailable for a failure worth retrying
  // (connection refused, timeout, 5xx, 429, 401/403: a token an operator can fix);
  // kInvalidArgument when the receiver refused the event itself (another 4xx: resending the
  // same event cannot succeed); kIoError for a file that cannot be written.
  virtual Status Send(std::string_view event_json) = 0;
  // "http://host:5000/api/v1/lineage", "file /var/log/lineage.jsonl", "console": for logs.
  virtual std::string Describe() const = 0;
};

struct HttpTransportOptions {
  // The full endpoint URL: "http://marquez:5000/api/v1/lineage"; a URL naming only a host (and
  // port) gets Marquez's path /api/v1/lineage.
  std::string url;
  std::string api_key;  // sent as "Authorization: Bearer <key>" when set
  std::chrono::milliseconds timeout{5'000};
  std::chrono::milliseconds connect_timeout{2'000};
};

// kInvalidArgument for a URL that is not http(s)://host[:port][/path].
Result<std::unique_ptr<Transport>> MakeHttpTransport(HttpTransportOptions options);

struct FileTransportOptions {
  std::string path;
  // When the file would grow past max_bytes it is renamed to <path>.1 (older ones shift to .2 …
  // up to max_files, the oldest is removed) and a new one is started. 0 = never rotate.
  int64_t max_bytes = 64LL << 20;
  int max_files = 5;
};

// Appends one line per event and flushes it to the file system (fsync) before reporting it
// delivered. kIoError when the file cannot be opened.
Result<std::unique_ptr<Transport>> MakeFileTransport(FileTransportOptions options);

// Writes one line per event to `out` (borrowed; must outlive the transport).
std::unique_ptr<Transport> MakeConsoleTransport(std::ostream& out);

}  // namespace skade::lineage
