#include "skade/table/commit_stream.h"

#include <utility>

namespace skade::table {

TableCommitStream::TableCommitStream(catalog::TableIdent table,
                                     std::unique_ptr<events::ReplayThenTail> stream)
    : table_(std::move(table)), table_name_(table_.ToString()), stream_(std::move(stream)) {}

Result<std::unique_ptr<TableCommitStream>> TableCommitStream::Open(
    catalog::Catalog& catalog, events::Bus& bus, const catalog::TableIdent& table,
    std::optional<int64_t> after_commit_seq, events::ReplayThenTail::Options options) {
  SKADE_ASSIGN_OR_RETURN(std::unique_ptr<events::ReplayThenTail> stream,
                         events::ReplayThenTail::Open(catalog, bus, after_commit_seq, options));
  return std::unique_ptr<TableCommitStream>(new TableCommitStream(table, std::move(stream)));
}

Result<std::optional<events::CommitEvent>> TableCommitStream::Next(
    std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    std::chrono::nanoseconds remaining =
        deadline > now ? std::chrono::nanoseconds(deadline - now) : std::chrono::nanoseconds(0);
    SKADE_ASSIGN_OR_RETURN(std::optional<events::CommitEvent> next, stream_->Next(remaining));
    if (!next) return std::optional<events::CommitEvent>();
    // Namespace levels never contain '.', so the dotted names are equal iff the idents are.
    if (next->table_name() == table_name_) return next;
    // Another table's commit: skipped (the cursor moved past it). Under a steady stream of
    // other tables' commits the deadline still ends the call.
    if (std::chrono::steady_clock::now() >= deadline) return std::optional<events::CommitEvent>();
  }
}

}  // namespace skade::table
