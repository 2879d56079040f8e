// What one client can hold on the Flight SQL server (DESIGN §11: nothing one client does can
// exhaust another's resources): concurrent DoGet/DoPut streams per owner and in all, a stall
// timeout for streams whose client stops reading or sending, and a byte budget for the client
// data the server buffers outside DuckDB (queued result batches, decoded DoPut messages, bound
// parameters). The monitor also ends the work of streams whose client went away.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "skade/base/status.h"

namespace skade::flightsql {

// Bytes held for clients, bounded. Thread-safe.
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit) : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Held bytes, given back when destroyed. Movable; must not outlive its budget.
  class Reservation {
   public:
    Reservation() = default;
    ~Reservation() { Release(); }
    Reservation(Reservation&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) { other.budget_ = nullptr; }
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    int64_t bytes() const { return budget_ ? bytes_ : 0; }
    void Release();

   private:
    friend class MemoryBudget;
    Reservation(MemoryBudget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) {}
    MemoryBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  // `bytes` when they fit under the limit; kResourceExhausted naming `what` otherwise.
  Result<Reservation> Reserve(int64_t bytes, std::string_view what);
  // `bytes` even past the limit: for a stream that holds nothing else, so that every stream can
  // always make progress (the overshoot is bounded by one message per admitted stream).
  Reservation ReserveAnyway(int64_t bytes);

  int64_t limit() const { return limit_; }
  int64_t used() const;
  int64_t available() const;
  // The most ever held at once (for tests and logs).
  int64_t peak() const;

 private:
  void Give(int64_t bytes);
  const int64_t limit_;
  mutable std::mutex mu_;
  int64_t used_ = 0;
  int64_t peak_ = 0;
};

struct StreamLimits {
  int max_streams_per_owner = 16;  // concurrent DoGet + DoPut streams of one owner
  int max_streams = 256;           // of all owners
  // A stream whose client accepts no data (DoGet) or sends none (DoPut) this long is ended.
  std::chrono::milliseconds stall_timeout{60000};
};

// Why a stream was ended from outside its handler.
enum class StreamEnd { kNone, kClientGone, kStalled, kShutdown };

class StreamMonitor;

// One admitted DoGet or DoPut stream; destroying it ends its admission. Thread-safe.
class ActiveStream {
 public:
  ~ActiveStream();
  ActiveStream(const ActiveStream&) = delete;
  ActiveStream& operator=(const ActiveStream&) = delete;

  // Marks the stream as waiting for its client (a Write held by flow control, a Read) for its
  // lifetime; the monitor ends a stream that waits longer than the stall timeout.
  class ClientWait {
   public:
    ~ClientWait();
    ClientWait(const ClientWait&) = delete;
    ClientWait& operator=(const ClientWait&) = delete;

   private:
    friend class ActiveStream;
    explicit ClientWait(ActiveStream* stream) : stream_(stream) {}
    ActiveStream* stream_;
  };
  ClientWait WaitForClient();

  // Calls `fn` once, on the monitor's thread, when the stream is ended from outside (client
  // gone, deadline passed, stalled, shutdown) while the returned registration lives; at once
  // if it already was. The registration's destruction waits for a running `fn`.
  class Watch {
   public:
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    friend class ActiveStream;
    Watch(ActiveStream* stream, uint64_t id) : stream_(stream), id_(id) {}
    ActiveStream* stream_;
    uint64_t id_;
  };
  std::unique_ptr<Watch> OnEnd(std::function<void()> fn);

  StreamEnd ended() const;

  struct State;

 private:
  friend class StreamMonitor;
  ActiveStream(StreamMonitor* monitor, std::shared_ptr<State> state) : monitor_(monitor), state_(std::move(state)) {}
  StreamMonitor* monitor_;
  std::shared_ptr<State> state_;
};

// Admits streams and ends those whose client went away or stalled. Thread-safe.
class StreamMonitor {
 public:
  explicit StreamMonitor(StreamLimits limits);
  ~StreamMonitor();

  // Admits a stream of `owner` (the authenticated principal, or the client's address on a
  // server without authentication) on `context` (borrowed; outlives the stream).
  // kResourceExhausted past the owner's or the server's limit.
  Result<std::unique_ptr<ActiveStream>> Admit(const std::string& owner, grpc::ServerContext* context);

  // Ends the streams whose client went away, whose deadline passed or that stalled; call every
  // few tens of milliseconds.
  void Check();
  // Ends every stream (shutdown).
  void EndAll();

  size_t active() const;
  const StreamLimits& limits() const { return limits_; }

 private:
  friend class ActiveStream;
  void Remove(const std::shared_ptr<ActiveStream::State>& state);
  // Ends `state` for `why` (first reason wins): cancels the call and runs its callbacks.
  static void End(ActiveStream::State& state, StreamEnd why);

  const StreamLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, int> per_owner_;
  std::vector<std::shared_ptr<ActiveStream::State>> streams_;
};

}  // namespace skade::flightsql
