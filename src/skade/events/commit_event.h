// CommitEvent: one catalog commit as subscribers see it (DESIGN §8), built from a row of the
// durable commit log. Copying one costs a few integers and one shared_ptr increment.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "skade/catalog/catalog.h"

namespace skade::events {

// The text fields of an event, shared by every copy.
struct CommitEventText {
  catalog::TableIdent table;
  std::string table_name;  // table.ToString(): "ns.table", nested namespaces as "a.b.table"
  std::string metadata_location;
  std::string operation;  // snapshot operation ("append", "overwrite"…), "create", "drop"…
  std::string txn_id;     // the catalog transaction; shared by the tables of a multi-table commit
};

// Immutable value; thread-compatible (copies may be read from any thread).
struct CommitEvent {
  int64_t commit_seq = 0;
  int64_t committed_at_us = 0;
  std::optional<int64_t> snapshot_id;  // the table's current snapshot after the commit
  int64_t added_records = 0;
  int64_t deleted_records = 0;
  std::shared_ptr<const CommitEventText> text;  // never null in events from FromLogEntry

  static CommitEvent FromLogEntry(const catalog::CommitLogEntry& entry);

  const catalog::TableIdent& table() const { return text->table; }
  const std::string& table_name() const { return text->table_name; }
  const std::string& metadata_location() const { return text->metadata_location; }
  const std::string& operation() const { return text->operation; }
  const std::string& txn_id() const { return text->txn_id; }
};

}  // namespace skade::events
