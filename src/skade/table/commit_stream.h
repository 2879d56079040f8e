// TableCommitStream: the commit events of one table (DESIGN §8), replayed from the catalog's
// durable log after a cursor and then tailed live from the Bus, with no gap and no duplicate.
// What IcebergSource::Subscribe returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/events/bus.h"
#include "skade/events/commit_event.h"
#include "skade/events/replay.h"

namespace skade::table {

// Thread-compatible (one consumer thread). Borrows `catalog` and `bus`, which must outlive it;
// the bus must be fed by an events::Watcher on the same catalog. The table is followed by
// name: after a rename its later commits are logged under the new name and no longer match,
// and a table created again under the same name matches.
class TableCommitStream {
 public:
  // Every commit of `table` with commit_seq > `after_commit_seq`; nullopt starts at the log's
  // head (commits from now on). kInvalidArgument for a negative cursor; errors of
  // Catalog::LatestCommitSeq.
  static Result<std::unique_ptr<TableCommitStream>> Open(
      catalog::Catalog& catalog, events::Bus& bus, const catalog::TableIdent& table,
      std::optional<int64_t> after_commit_seq, events::ReplayThenTail::Options options = {});

  // The table's next event, or nullopt if none arrived within `timeout`. Events of other tables
  // are skipped (each call examines at least one available event, so a zero timeout still
  // makes progress). kUnavailable when the bus was closed; catalog errors as
  // ReplayThenTail::Next (the stream stays usable).
  Result<std::optional<events::CommitEvent>> Next(std::chrono::nanoseconds timeout);

  // The commit_seq up to which the log has been examined, other tables' commits included: a
  // consumer that stores it resumes with Open(…, cursor()) and misses nothing.
  int64_t cursor() const { return stream_->cursor(); }
  const catalog::TableIdent& table() const { return table_; }

 private:
  TableCommitStream(catalog::TableIdent table, std::unique_ptr<events::ReplayThenTail> stream);

  const catalog::TableIdent table_;
  const std::string table_name_;  // table_.ToString(), compared with CommitEvent::table_name()
  std::unique_ptr<events::ReplayThenTail> stream_;
};

}  // namespace skade::table
