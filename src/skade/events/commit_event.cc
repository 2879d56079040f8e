#include "skade/events/commit_event.h"

#include <utility>

namespace skade::events {

CommitEvent CommitEvent::FromLogEntry(const catalog::CommitLogEntry& entry) {
  CommitEvent event;
  event.commit_seq = entry.commit_seq;
  event.committed_at_us = entry.committed_at_us;
  event.snapshot_id = entry.snapshot_id;
  event.added_records = entry.added_records;
  event.deleted_records = entry.deleted_records;
  auto text = std::make_shared<CommitEventText>();
  text->table = entry.table;
  text->table_name = entry.table.ToString();
  // A dropped table has no current metadata; its last one is the useful location.
  text->metadata_location =
      entry.metadata_location.empty() ? entry.previous_metadata_location : entry.metadata_location;
  text->operation = entry.operation;
  text->txn_id = entry.txn_id;
  event.text = std::move(text);
  return event;
}

}  // namespace skade::events
