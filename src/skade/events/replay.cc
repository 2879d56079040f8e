#include "skade/events/replay.h"

#include <string>
#include <utility>

namespace skade::events {

Result<std::vector<CommitEvent>> CommitsSince(catalog::Catalog& catalog, int64_t after_seq,
                                              int64_t limit) {
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::CommitLogEntry> entries,
                         catalog.CommitsSince(after_seq, limit));
  std::vector<CommitEvent> out;
  out.reserve(entries.size());
  for (const catalog::CommitLogEntry& entry : entries) out.push_back(CommitEvent::FromLogEntry(entry));
  return out;
}

ReplayThenTail::ReplayThenTail(catalog::Catalog& catalog, Bus& bus, int64_t after_seq,
                               Options options)
    : catalog_(catalog),
      options_(options),
      receiver_(bus.Subscribe().receiver),
      cursor_(after_seq) {
  if (options_.replay_batch <= 0) options_.replay_batch = 1;
}

Result<std::unique_ptr<ReplayThenTail>> ReplayThenTail::Open(catalog::Catalog& catalog, Bus& bus,
                                                             std::optional<int64_t> after_seq,
                                                             Options options) {
  if (after_seq && *after_seq < 0) {
    return Status::InvalidArgument("commit cursor must be >= 0, got " + std::to_string(*after_seq));
  }
  // Subscribed (in the constructor) before the head is read: no commit falls in between.
  auto stream = std::make_unique<ReplayThenTail>(catalog, bus, after_seq.value_or(0), options);
  if (!after_seq) {
    SKADE_ASSIGN_OR_RETURN(stream->cursor_, catalog.LatestCommitSeq());
  }
  return stream;
}

Result<std::optional<CommitEvent>> ReplayThenTail::Next(std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (!buffer_.empty()) {
      CommitEvent event = std::move(buffer_.front());
      buffer_.pop_front();
      cursor_ = event.commit_seq;
      return std::optional<CommitEvent>(std::move(event));
    }
    if (replaying_) {
      // The log is the truth: it is dense, so a batch starting at cursor_ + 1 has no gap.
      SKADE_ASSIGN_OR_RETURN(std::vector<catalog::CommitLogEntry> entries,
                             catalog_.CommitsSince(cursor_, options_.replay_batch));
      if (entries.empty()) {
        // Caught up: everything later is published on the bus after our subscription.
        replaying_ = false;
        continue;
      }
      for (const catalog::CommitLogEntry& entry : entries) {
        buffer_.push_back(CommitEvent::FromLogEntry(entry));
      }
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    Received received = receiver_.Next(deadline > now ? deadline - now : std::chrono::nanoseconds(0));
    switch (received.kind) {
      case Received::Kind::kEvent:
        if (received.event.commit_seq <= cursor_) continue;  // already returned from the log
        if (received.event.commit_seq == cursor_ + 1) {
          cursor_ = received.event.commit_seq;
          return std::optional<CommitEvent>(std::move(received.event));
        }
        // A gap (the bus started later than our cursor, or a publisher skipped): replay.
        replaying_ = true;
        ++recoveries_;
        continue;
      case Received::Kind::kLagged:
        replaying_ = true;
        ++recoveries_;
        continue;
      case Received::Kind::kTimeout:
        return std::optional<CommitEvent>();
      case Received::Kind::kClosed:
        closed_ = true;
        return Status::Unavailable("commit event bus closed");
    }
  }
}

}  // namespace skade::events
