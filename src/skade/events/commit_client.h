// A C++ client of the skade.v1.Commits gRPC service (used by `skade watch --server` and tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/events/commit_event.h"

namespace skade::events {

// One Subscribe call. Next is called from one thread; Cancel from any thread.
class CommitClientStream {
 public:
  virtual ~CommitClientStream() = default;
  // Blocks for the next event. nullopt when the server ended the stream with OK. Errors map the
  // gRPC status: INVALID_ARGUMENT → kInvalidArgument; NOT_FOUND → kNotFound; UNAVAILABLE, CANCELLED,
  // DEADLINE_EXCEEDED → kUnavailable; anything else → kInternal.
  virtual Result<std::optional<CommitEvent>> Next() = 0;
  // Ends the call; a blocked Next returns kUnavailable.
  virtual void Cancel() = 0;
};

// Thread-safe.
class CommitClient {
 public:
  virtual ~CommitClient() = default;
  struct Options {
    // 0: gRPC's adaptive receive window (BDP probing). > 0: a fixed per-stream window of this
    // many bytes (tests use a small one to model a client that never reads).
    int fixed_window_bytes = 0;
    // Sent as the `authorization` header of every call when set (e.g. "Basic <base64>", or
    // "Bearer <token>"), for servers that authenticate.
    std::string authorization;
  };
  // `address` is host:port; connects lazily (plaintext).
  static Result<std::unique_ptr<CommitClient>> Connect(const std::string& address,
                                                       Options options);
  static Result<std::unique_ptr<CommitClient>> Connect(const std::string& address) {
    return Connect(address, Options());
  }
  virtual Result<int64_t> Latest(std::chrono::milliseconds timeout) = 0;
  // Commits after `after_commit_seq` (0 = from the first), then live; nullopt = only commits
  // made from now on. `deadline` 0 = none. With `existing_tables_only`, a name in `tables` that
  // is not a table of the server's catalog ends the stream with kNotFound naming it (otherwise
  // it matches nothing until such a table exists).
  virtual Result<std::unique_ptr<CommitClientStream>> Subscribe(
      std::optional<int64_t> after_commit_seq, const std::vector<std::string>& tables,
      std::chrono::milliseconds deadline, bool existing_tables_only) = 0;
};

}  // namespace skade::events
