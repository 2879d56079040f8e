// Table maintenance subcommands: schema / partition / sort evolution, properties, snapshot
// management (rollback, set-current, branches, tags), snapshot expiry and orphan-file removal.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "skade/base/clock.h"
#include "skade/cli/commands.h"
#include "skade/cli/lake.h"
#include "skade/cli/messages.h"
#include "skade/table/table.h"

namespace skade::cli {
namespace {

using Json = nlohmann::ordered_json;

int Fail(std::ostream& err, const Status& st) {
  err << ErrorLine(st) << "\n";
  return 1;
}

std::string Dump(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace); }

// An open lake plus one loaded table.
struct OpenTable {
  Lake lake;
  std::unique_ptr<table::Table> table;
};

Result<OpenTable> LoadTable(const LakeArgs& args, const std::string& name) {
  OpenTable out;
  SKADE_ASSIGN_OR_RETURN(out.lake, OpenLake(args));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(name));
  if (ident.ns.empty())
    return Status::InvalidArgument("table '" + name + "' must be written ns.table");
  SKADE_ASSIGN_OR_RETURN(out.table, LoadLakeTable(out.lake, ident));
  return out;
}

// "--older-than": epoch milliseconds or an ISO-8601 timestamp.
Result<int64_t> ParseCutoff(const std::string& text) {
  std::optional<int64_t> ms = ParseTimestampMillis(text);
  if (!ms)
    return Status::InvalidArgument("cannot read --older-than '" + text +
                                   "' (epoch ms or ISO timestamp)");
  return *ms;
}

void PrintOutcome(std::ostream& out, const std::string& what, const table::CommitOutcome& o) {
  out << what;
  if (o.commit_seq > 0) {
    out << " (commit " << o.commit_seq;
    if (o.snapshot_id != 0) out << ", current snapshot " << o.snapshot_id;
    out << ")";
  } else {
    out << " (nothing to change)";
  }
  out << "\n";
}

std::string Join(const std::vector<std::string>& words, size_t from) {
  std::string out;
  for (size_t i = from; i < words.size(); ++i) out += (i > from ? " " : "") + words[i];
  return out;
}

// ---- alter ----

struct AlterArgs {
  std::string table;
  std::string action;
  std::vector<std::string> args;
  std::string doc;
  std::string default_json;
  bool has_default = false;
};

Result<table::SchemaChange> ChangeFromArgs(const AlterArgs& a) {
  using Kind = table::SchemaChange::Kind;
  table::SchemaChange c;
  auto need = [&](size_t n, const char* usage) -> Status {
    if (a.args.size() < n)
      return Status::InvalidArgument("usage: alter TABLE " + a.action + " " + usage);
    return Status::Ok();
  };
  if (a.action == "add-column") {
    SKADE_RETURN_IF_ERROR(need(2, "NAME TYPE [--doc D] [--default JSON]"));
    c.kind = Kind::kAddColumn;
    c.column = a.args[0];
    c.type = Join(a.args, 1);  // "DECIMAL(12, 2)" or "BIGINT NOT NULL" may arrive as several words
    c.doc = a.doc;
    if (a.has_default) c.default_json = a.default_json;
  } else if (a.action == "drop-column") {
    SKADE_RETURN_IF_ERROR(need(1, "NAME"));
    c.kind = Kind::kDropColumn;
    c.column = a.args[0];
  } else if (a.action == "rename-column") {
    SKADE_RETURN_IF_ERROR(need(2, "NAME NEW_NAME"));
    c.kind = Kind::kRenameColumn;
    c.column = a.args[0];
    c.new_name = a.args[1];
  } else if (a.action == "update-type") {
    SKADE_RETURN_IF_ERROR(need(2, "NAME TYPE"));
    c.kind = Kind::kUpdateType;
    c.column = a.args[0];
    c.type = Join(a.args, 1);
  } else if (a.action == "make-optional") {
    SKADE_RETURN_IF_ERROR(need(1, "NAME"));
    c.kind = Kind::kMakeOptional;
    c.column = a.args[0];
  } else if (a.action == "set-doc") {
    SKADE_RETURN_IF_ERROR(need(1, "NAME --doc TEXT"));
    c.kind = Kind::kSetDoc;
    c.column = a.args[0];
    c.doc = a.doc;
  } else if (a.action == "move") {
    SKADE_RETURN_IF_ERROR(need(2, "NAME (first | before REF | after REF)"));
    c.column = a.args[0];
    const std::string& where = a.args[1];
    if (where == "first" && a.args.size() == 2) {
      c.kind = Kind::kMoveFirst;
    } else if ((where == "before" || where == "after") && a.args.size() == 3) {
      c.kind = where == "before" ? Kind::kMoveBefore : Kind::kMoveAfter;
      c.reference = a.args[2];
    } else {
      return Status::InvalidArgument(
          "usage: alter TABLE move NAME (first | before REF | after REF)");
    }
  } else if (a.action == "identifier-fields") {
    c.kind = Kind::kSetIdentifierFields;
    c.identifier_fields = a.args;
  } else {
    return Status::InvalidArgument("unknown alter action '" + a.action + "'");
  }
  return c;
}

int RunAlter(const LakeArgs& lake, const AlterArgs& a, std::ostream& out, std::ostream& err) {
  auto change = ChangeFromArgs(a);
  if (!change.ok()) return Fail(err, change.status());
  auto t = LoadTable(lake, a.table);
  if (!t.ok()) return Fail(err, t.status());
  auto o = t->table->UpdateSchema({*change});
  if (!o.ok()) return Fail(err, o.status());
  PrintOutcome(out,
               a.action + " on " + a.table + ": schema " +
                   std::to_string(t->table->metadata().current_schema_id),
               *o);
  return 0;
}

// ---- partition / sort / props ----

struct TextArgs {
  std::string table;
  std::string text;
};

struct PropsArgs {
  std::string table;
  std::vector<std::string> set;
  std::vector<std::string> unset;
  bool json = false;
};

int RunProps(const LakeArgs& lake, const PropsArgs& a, std::ostream& out, std::ostream& err) {
  auto t = LoadTable(lake, a.table);
  if (!t.ok()) return Fail(err, t.status());
  if (!a.set.empty() || !a.unset.empty()) {
    auto kv = ParseKeyValues(a.set);
    if (!kv.ok()) return Fail(err, kv.status());
    auto o = t->table->UpdateProperties(*kv, a.unset);
    if (!o.ok()) return Fail(err, o.status());
  }
  const auto& props = t->table->metadata().properties;
  if (a.json) {
    Json j = Json::object();
    for (const auto& [k, v] : props) j[k] = v;
    out << Dump(j) << "\n";
  } else {
    for (const auto& [k, v] : props) out << k << "=" << v << "\n";
  }
  return 0;
}

// ---- snapshots and refs ----

struct SnapshotArgs {
  std::string table;
  int64_t snapshot_id = 0;
};

struct RefArgs {
  std::string table;
  std::string name;
  std::string drop;
  int64_t snapshot_id = 0;
  bool has_snapshot = false;
};

int RunRef(const LakeArgs& lake, const RefArgs& a, bool tag, std::ostream& out, std::ostream& err) {
  const char* kind = tag ? "tag" : "branch";
  if (a.drop.empty() == a.name.empty()) {
    return Fail(err, Status::InvalidArgument(std::string("give a ") + kind +
                                             " NAME to create, or --drop NAME"));
  }
  auto t = LoadTable(lake, a.table);
  if (!t.ok()) return Fail(err, t.status());
  if (!a.drop.empty()) {
    auto ref = t->table->metadata().refs.find(a.drop);
    if (ref != t->table->metadata().refs.end() &&
        (ref->second.type == iceberg::RefType::kTag) != tag) {
      return Fail(err, Status::InvalidArgument("'" + a.drop + "' is a " + (tag ? "branch" : "tag") +
                                               ", not a " + kind));
    }
    auto o = t->table->DropRef(a.drop);
    if (!o.ok()) return Fail(err, o.status());
    PrintOutcome(out, std::string("dropped ") + kind + " " + a.drop, *o);
    return 0;
  }
  std::optional<int64_t> sid;
  if (a.has_snapshot) sid = a.snapshot_id;
  auto o = tag ? t->table->CreateTag(a.name, sid) : t->table->CreateBranch(a.name, sid);
  if (!o.ok()) return Fail(err, o.status());
  int64_t target = t->table->metadata().refs.at(a.name).snapshot_id;
  PrintOutcome(
      out, std::string("created ") + kind + " " + a.name + " at snapshot " + std::to_string(target),
      *o);
  return 0;
}

// ---- expire / gc ----

struct ExpireArgs {
  std::string table;
  std::string older_than;
  int retain_last = 1;
  bool has_retain_last = false;
  bool dry_run = false;
  bool keep_files = false;
  bool json = false;
};

int RunExpire(const LakeArgs& lake, const ExpireArgs& a, std::ostream& out, std::ostream& err) {
  table::ExpireOptions options;
  if (!a.older_than.empty()) {
    auto cutoff = ParseCutoff(a.older_than);
    if (!cutoff.ok()) return Fail(err, cutoff.status());
    options.older_than_ms = *cutoff;
  }
  if (a.has_retain_last) {
    if (a.retain_last < 1) {
      return Fail(err, Status::InvalidArgument("--retain-last " + std::to_string(a.retain_last) +
                                               ": at least 1 (the current snapshot always stays)"));
    }
    options.retain_last = a.retain_last;
  }
  options.dry_run = a.dry_run;
  options.delete_files = !a.keep_files;
  auto t = LoadTable(lake, a.table);
  if (!t.ok()) return Fail(err, t.status());
  auto r = t->table->ExpireSnapshots(options);
  if (!r.ok()) return Fail(err, r.status());
  if (a.json) {
    Json j = Json::object();
    j["table"] = a.table;
    j["dry_run"] = a.dry_run;
    j["expired_snapshot_ids"] = r->expired_snapshot_ids;
    j["commit_seq"] = r->commit_seq > 0 ? Json(r->commit_seq) : Json(nullptr);
    j["deleted_data_files"] = r->deleted_data_files;
    j["deleted_delete_files"] = r->deleted_delete_files;
    j["deleted_manifests"] = r->deleted_manifests;
    j["deleted_manifest_lists"] = r->deleted_manifest_lists;
    j["deleted_statistics_files"] = r->deleted_statistics_files;
    j["files"] = r->deleted_files;
    out << Dump(j) << "\n";
    return 0;
  }
  const char* verb = a.dry_run ? "would expire" : "expired";
  out << verb << " " << r->expired_snapshot_ids.size() << " snapshot(s) of " << a.table;
  if (r->commit_seq > 0) out << " (commit " << r->commit_seq << ")";
  out << "\n";
  for (int64_t id : r->expired_snapshot_ids) out << "  snapshot " << id << "\n";
  out << (a.dry_run ? "would delete " : "deleted ") << r->deleted_data_files << " data file(s), "
      << r->deleted_delete_files << " delete file(s), " << r->deleted_manifests << " manifest(s), "
      << r->deleted_manifest_lists << " manifest list(s), " << r->deleted_statistics_files
      << " statistics file(s)\n";
  return 0;
}

struct GcArgs {
  std::string table;
  std::string older_than;
  bool dry_run = false;
  bool json = false;
  bool force = false;  // also a table whose location is outside the warehouse
};

int RunGc(const LakeArgs& lake, const GcArgs& a, std::ostream& out, std::ostream& err) {
  // Iceberg's default: only files older than 3 days count, so commits in flight are safe.
  int64_t cutoff = NowMillis() - 3LL * 24 * 3600 * 1000;
  if (!a.older_than.empty()) {
    auto parsed = ParseCutoff(a.older_than);
    if (!parsed.ok()) return Fail(err, parsed.status());
    cutoff = *parsed;
    // A cutoff in the future would count the files of commits in flight as orphans.
    if (cutoff > NowMillis()) {
      return Fail(err, Status::InvalidArgument("--older-than " + a.older_than +
                                               " is in the future: gc removes only files older than it, and "
                                               "younger files may belong to commits in flight"));
    }
  }
  auto t = LoadTable(lake, a.table);
  if (!t.ok()) return Fail(err, t.status());
  auto r = t->table->RemoveOrphanFiles(
      cutoff, a.dry_run ? table::Table::OrphanMode::kDryRun : table::Table::OrphanMode::kDelete,
      a.force ? table::Table::OrphanScope::kAnywhere : table::Table::OrphanScope::kWarehouse);
  if (!r.ok()) return Fail(err, r.status());
  if (a.json) {
    Json j = Json::object();
    j["table"] = a.table;
    j["older_than_ms"] = cutoff;
    j["deleted"] = r->deleted;
    j["orphans"] = r->orphans;
    out << Dump(j) << "\n";
    return 0;
  }
  for (const std::string& p : r->orphans) out << p << "\n";
  out << (r->deleted ? "deleted " : "found ") << r->orphans.size() << " orphan file(s) in "
      << a.table << (r->deleted ? "" : " (dry run)") << "\n";
  return 0;
}

}  // namespace

void AddMaintenanceCommands(CLI::App& app, const LakeArgs& lake, int* exit_code) {
  // Each subcommand's arguments live as long as the callbacks that read them.
  const LakeArgs* lake_args = &lake;

  auto alter = std::make_shared<AlterArgs>();
  auto* alter_cmd = app.add_subcommand(
      "alter",
      "Evolve a table's schema: add-column NAME TYPE | drop-column NAME | rename-column NAME NEW | "
      "update-type NAME TYPE | make-optional NAME | set-doc NAME | move NAME (first | before REF | "
      "after REF) | identifier-fields COL...");
  alter_cmd->add_option("table", alter->table, "ns.table")->required();
  alter_cmd->add_option("action", alter->action, "the change")
      ->required()
      ->check(CLI::IsMember({"add-column", "drop-column", "rename-column", "update-type",
                             "make-optional", "set-doc", "move", "identifier-fields"}));
  alter_cmd->add_option("args", alter->args,
                        "the change's arguments (columns nested as a.b, l.element.x, m.value.y)");
  alter_cmd->add_option("--doc", alter->doc, "column doc (add-column, set-doc)");
  auto* default_opt =
      alter_cmd->add_option("--default", alter->default_json,
                            "initial default as single-value JSON (format v3), e.g. 0 or '\"x\"'");
  alter_cmd->callback([=] {
    alter->has_default = default_opt->count() > 0;
    *exit_code = RunAlter(*lake_args, *alter, std::cout, std::cerr);
  });

  auto partition = std::make_shared<TextArgs>();
  auto* partition_cmd = app.add_subcommand(
      "partition", "Set the partition spec (spec evolution; \"\" = unpartitioned)");
  partition_cmd->add_option("table", partition->table, "ns.table")->required();
  partition_cmd->add_option("spec", partition->text, "e.g. \"day(ts), bucket(16, id)\"")
      ->required();
  partition_cmd->callback([=] {
    auto t = LoadTable(*lake_args, partition->table);
    if (!t.ok()) {
      *exit_code = Fail(std::cerr, t.status());
      return;
    }
    auto o = t->table->UpdatePartitionSpec(partition->text);
    if (!o.ok()) {
      *exit_code = Fail(std::cerr, o.status());
      return;
    }
    PrintOutcome(std::cout,
                 "partition spec of " + partition->table + " is now spec " +
                     std::to_string(t->table->metadata().default_spec_id),
                 *o);
    *exit_code = 0;
  });

  auto sort = std::make_shared<TextArgs>();
  auto* sort_cmd = app.add_subcommand("sort", "Set the default sort order (\"\" = unsorted)");
  sort_cmd->add_option("table", sort->table, "ns.table")->required();
  sort_cmd->add_option("order", sort->text, "e.g. \"id DESC NULLS LAST, day(ts)\"")->required();
  sort_cmd->callback([=] {
    auto t = LoadTable(*lake_args, sort->table);
    if (!t.ok()) {
      *exit_code = Fail(std::cerr, t.status());
      return;
    }
    auto o = t->table->UpdateSortOrder(sort->text);
    if (!o.ok()) {
      *exit_code = Fail(std::cerr, o.status());
      return;
    }
    PrintOutcome(std::cout,
                 "sort order of " + sort->table + " is now order " +
                     std::to_string(t->table->metadata().default_sort_order_id),
                 *o);
    *exit_code = 0;
  });

  auto props = std::make_shared<PropsArgs>();
  auto* props_cmd = app.add_subcommand("props", "Show, set or remove table properties");
  props_cmd->add_option("table", props->table, "ns.table")->required();
  props_cmd->add_option("--set", props->set, "KEY=VALUE");
  props_cmd->add_option("--unset", props->unset, "KEY");
  props_cmd->add_flag("--json", props->json, "JSON output");
  props_cmd->callback([=] { *exit_code = RunProps(*lake_args, *props, std::cout, std::cerr); });

  auto rollback = std::make_shared<SnapshotArgs>();
  auto* rollback_cmd = app.add_subcommand("rollback", "Move main back to an ancestor snapshot");
  rollback_cmd->add_option("table", rollback->table, "ns.table")->required();
  rollback_cmd->add_option("snapshot", rollback->snapshot_id, "snapshot id")->required();
  auto set_current = std::make_shared<SnapshotArgs>();
  auto* set_current_cmd =
      app.add_subcommand("set-current", "Move main to any snapshot of the table");
  set_current_cmd->add_option("table", set_current->table, "ns.table")->required();
  set_current_cmd->add_option("snapshot", set_current->snapshot_id, "snapshot id")->required();
  auto run_move = [exit_code, lake_args](const SnapshotArgs& a, bool rollback_only) {
    auto t = LoadTable(*lake_args, a.table);
    if (!t.ok()) {
      *exit_code = Fail(std::cerr, t.status());
      return;
    }
    auto o = rollback_only ? t->table->Rollback(a.snapshot_id)
                           : t->table->SetCurrentSnapshot(a.snapshot_id);
    if (!o.ok()) {
      *exit_code = Fail(std::cerr, o.status());
      return;
    }
    PrintOutcome(std::cout,
                 std::string(rollback_only ? "rolled back " : "set current snapshot of ") +
                     a.table + " to " + std::to_string(a.snapshot_id),
                 *o);
    *exit_code = 0;
  };
  rollback_cmd->callback([=] { run_move(*rollback, true); });
  set_current_cmd->callback([=] { run_move(*set_current, false); });

  for (bool tag : {false, true}) {
    auto ref = std::make_shared<RefArgs>();
    auto* cmd = app.add_subcommand(
        tag ? "tag" : "branch",
        tag ? "Create a tag (NAME [--snapshot ID]) or drop one (--drop NAME)"
            : "Create a branch (NAME [--snapshot ID]) or drop one (--drop NAME)");
    cmd->add_option("table", ref->table, "ns.table")->required();
    cmd->add_option("name", ref->name, "name of the ref to create");
    auto* snap = cmd->add_option("--snapshot", ref->snapshot_id, "snapshot id (default: current)");
    auto* drop = cmd->add_option("--drop", ref->drop, "drop this ref instead");
    snap->excludes(drop);
    cmd->callback([=] {
      ref->has_snapshot = snap->count() > 0;
      *exit_code = RunRef(*lake_args, *ref, tag, std::cout, std::cerr);
    });
  }

  auto expire = std::make_shared<ExpireArgs>();
  auto* expire_cmd =
      app.add_subcommand("expire", "Expire old snapshots and delete the files only they used");
  expire_cmd->add_option("table", expire->table, "ns.table")->required();
  expire_cmd->add_option(
      "--older-than", expire->older_than,
      "expire snapshots older than this (epoch ms or ISO; default: table property or 5 days)");
  auto* retain = expire_cmd
                     ->add_option("--retain-last", expire->retain_last,
                                  "keep this many newest snapshots of each branch (at least 1)");
  expire_cmd->add_flag("--dry-run", expire->dry_run, "show what would be expired and deleted");
  expire_cmd->add_flag("--keep-files", expire->keep_files, "only remove snapshots from metadata");
  expire_cmd->add_flag("--json", expire->json, "JSON output");
  expire_cmd->callback([=] {
    expire->has_retain_last = retain->count() > 0;
    *exit_code = RunExpire(*lake_args, *expire, std::cout, std::cerr);
  });

  auto gc = std::make_shared<GcArgs>();
  auto* gc_cmd = app.add_subcommand(
      "gc", "Remove orphan files (under the table location, referenced by nothing)");
  gc_cmd->add_option("table", gc->table, "ns.table")->required();
  gc_cmd->add_option("--older-than", gc->older_than,
                     "only files older than this (epoch ms or ISO; default 3 days)");
  gc_cmd->add_flag("--dry-run", gc->dry_run, "list orphans without deleting them");
  gc_cmd->add_flag("--force", gc->force, "also for a table whose location is outside the warehouse");
  gc_cmd->add_flag("--json", gc->json, "JSON output");
  gc_cmd->callback([=] { *exit_code = RunGc(*lake_args, *gc, std::cout, std::cerr); });
}

}  // namespace skade::cli
