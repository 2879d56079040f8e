// Several processes on one SQLite catalog: skade CLI processes and in-process writer threads
// committing to the same tables at once lose nothing and keep the commit log dense and in
// order; writers SIGKILLed at random points (DuckDB writing, manifest writing, catalog commit)
// leave a catalog that opens, tables that read, every acknowledged commit present, and only
// orphan files, which RemoveOrphanFiles removes exactly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <iostream>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "skade/base/clock.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/table/table.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace skade::table {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Every wait on a child that is not meant to be killed.
constexpr milliseconds kChildTimeout{120'000};

// A child process (`skade` with arguments) whose stdout and stderr go to files. Killed with
// SIGKILL and reaped when destroyed while still running. Not thread-safe.
class Child {
 public:
  // Starts the skade binary with `args`; nullptr (and a test failure) if posix_spawn fails.
  static std::unique_ptr<Child> Start(const std::vector<std::string>& args,
                                      const std::string& out_path, const std::string& err_path) {
    auto child = std::make_unique<Child>(out_path, err_path);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<std::string> argv_storage = {skade::testing::CliPath()};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&child->pid_, skade::testing::CliPath(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn failed: " << rc;
      return nullptr;
    }
    return child;
  }

  Child(std::string out_path, std::string err_path)
      : out_path_(std::move(out_path)), err_path_(std::move(err_path)) {}
  ~Child() {
    if (running()) Kill();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits until the child exits or `timeout` passes; true if it exited.
  bool WaitFor(milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (running()) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        killed_by_signal_ = WIFSIGNALED(status);
        break;
      }
      if (r < 0) {
        ADD_FAILURE() << "waitpid failed";
        exited_ = true;
        break;
      }
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }

  // SIGKILL, then reap (bounded wait).
  void Kill() {
    if (!running()) return;
    ::kill(pid_, SIGKILL);
    if (!WaitFor(milliseconds(10'000))) ADD_FAILURE() << "child " << pid_ << " survived SIGKILL";
  }

  bool running() const { return pid_ > 0 && !exited_; }
  bool exited_normally() const { return exited_ && !killed_by_signal_ && exit_code_ >= 0; }
  int exit_code() const { return exit_code_; }
  std::string out() const { return ReadIfExists(out_path_); }
  std::string err() const { return ReadIfExists(err_path_); }

 private:
  static std::string ReadIfExists(const std::string& path) {
    std::error_code ec;
    return fs::exists(path, ec) ? testing::ReadFileOrDie(path) : std::string();
  }

  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
  bool killed_by_signal_ = false;
  int exit_code_ = -1;
};

// JSON fields without exceptions: -1 / "" when missing or of another type.
int64_t Int(const Json& j, const char* key) {
  if (!j.is_object()) return -1;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}
std::string Str(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A decimal integer (-1 for NULL or text that is not one).
int64_t ParseInt(const std::optional<std::string>& text) {
  int64_t v = -1;
  if (!text) return v;
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  return ec == std::errc() && p == text->data() + text->size() ? v : -1;
}

// Runs skade to completion (bounded by kChildTimeout); exit code -1 if it did not exit normally.
testing::ProcessResult RunSkade(const testing::TempDir& tmp, const std::vector<std::string>& args) {
  static std::atomic<int> counter{0};
  int n = counter++;
  std::string out = tmp.Path("child-" + std::to_string(n) + ".out");
  std::string err = tmp.Path("child-" + std::to_string(n) + ".err");
  testing::ProcessResult result;
  auto child = Child::Start(args, out, err);
  if (!child) return result;
  if (!child->WaitFor(kChildTimeout)) {
    child->Kill();
    result.err = "timed out";
    return result;
  }
  result.exit_code = child->exited_normally() ? child->exit_code() : -1;
  result.out = child->out();
  result.err = child->err();
  std::error_code ec;
  fs::remove(out, ec);
  fs::remove(err, ec);
  return result;
}

// Local paths of every regular file under `root`.
std::set<std::string> ListFiles(const std::string& root) {
  std::set<std::string> files;
  std::error_code ec;
  if (!fs::exists(root, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) files.insert(fs::path(it->path()).lexically_normal().string());
  }
  return files;
}

std::string Normal(const std::string& location) {
  return fs::path(io::LocalPath(location)).lexically_normal().string();
}

// What a file under a table folder is, by skade's naming (table.cc).
enum class FileKind { kData, kManifest, kManifestList, kMetadataJson, kOther };
FileKind KindOf(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (path.find("/data/") != std::string::npos) return FileKind::kData;
  if (name.size() > 14 && name.ends_with(".metadata.json")) return FileKind::kMetadataJson;
  if (name.starts_with("snap-") && name.ends_with(".avro")) return FileKind::kManifestList;
  if (name.ends_with(".avro")) return FileKind::kManifest;
  return FileKind::kOther;
}

// Files referenced by the table's metadata (Iceberg spec "Delete Orphan Files": current and
// logged metadata files, every snapshot's manifest list, its manifests and their files), by
// walking the metadata independently of Table::RemoveOrphanFiles.
std::set<std::string> ReferencedFiles(io::FileIO& io, const catalog::TableState& state) {
  std::set<std::string> refs;
  const iceberg::TableMetadata& m = *state.metadata;
  refs.insert(Normal(state.metadata_location));
  for (const auto& e : m.metadata_log) refs.insert(Normal(e.metadata_file));
  refs.insert(Normal(io::JoinLocation(m.location, "metadata/version-hint.text")));
  iceberg::ScanPlanner planner(io, m);
  for (const iceberg::Snapshot& s : m.snapshots) {
    refs.insert(Normal(s.manifest_list));
    auto manifests = planner.LoadManifests(s);
    if (!manifests.ok()) {
      ADD_FAILURE() << manifests.status().ToString();
      continue;
    }
    for (const iceberg::ManifestFile& mf : *manifests) {
      refs.insert(Normal(mf.manifest_path));
      auto reader = iceberg::ManifestReader::Open(io, mf.manifest_path, mf);
      if (!reader.ok()) {
        ADD_FAILURE() << reader.status().ToString();
        continue;
      }
      while (true) {
        auto entry = (*reader)->Next();
        if (!entry.ok()) {
          ADD_FAILURE() << entry.status().ToString();
          break;
        }
        if (!*entry) break;
        refs.insert(Normal((*entry)->data_file.file_path));
      }
    }
  }
  return refs;
}

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    warehouse_ = tmp_.Path("warehouse");
    io_ = io::MakeLocalFileIO();
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
  }

  std::vector<std::string> Args(std::vector<std::string> rest) const {
    rest.insert(rest.begin(), {"--warehouse", warehouse_});
    return rest;
  }

  // Runs skade and expects exit 0; returns stdout.
  std::string Skade(std::vector<std::string> args) {
    auto r = RunSkade(tmp_, Args(std::move(args)));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  Result<std::unique_ptr<catalog::Catalog>> OpenCatalog(bool group_commit = true) {
    catalog::SqlCatalogOptions o;
    o.uri = "sqlite://" + warehouse_ + "/catalog.db";
    o.warehouse = warehouse_;
    o.group_commit = group_commit;
    return catalog::OpenSqlCatalog(o, *io_);
  }

  // Rows of `query` over the table's full read (ReadSql) exposed as `t`.
  Result<std::vector<engine::TextRow>> Query(Table& t, const std::string& query) {
    SKADE_ASSIGN_OR_RETURN(std::string sql, t.ReadSql({}));
    return db_->QueryRows("WITH t AS (" + sql + ") " + query);
  }

  testing::TempDir tmp_;
  std::string warehouse_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<engine::Database> db_;
};

// One acknowledged append of rows (p, i, batch) for i in [0, rows).
struct Ack {
  std::string table;
  int p = 0;
  int batch = 0;
  int64_t rows = 0;
  int64_t commit_seq = 0;
  int64_t snapshot_id = 0;
};

int64_t RowsFor(int p, int batch) { return 1 + (p * 31 + batch * 7) % 40; }

std::string AppendSql(int p, int batch) {
  return "SELECT " + std::to_string(p) + " AS p, range AS i, " + std::to_string(batch) +
         " AS batch FROM range(" + std::to_string(RowsFor(p, batch)) + ")";
}

TEST_F(ProcessTest, ProcessesAndThreadsCommitConcurrentlyWithoutLoss) {
  constexpr int kProcesses = 4, kThreads = 4, kCommits = 10;
  Skade({"ns", "create", "c"});
  Skade({"create", "c.t", "--schema", "p INTEGER, i BIGINT, batch INTEGER"});
  Skade({"create", "c.u", "--schema", "p INTEGER, i BIGINT, batch INTEGER", "--partition-by",
         "bucket(4, i)"});
  auto cat = OpenCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  catalog::Catalog& catalog = **cat;

  std::mutex mu;
  std::vector<Ack> acks;
  std::vector<std::string> failures;
  auto record = [&](Ack a) {
    std::lock_guard<std::mutex> lock(mu);
    acks.push_back(std::move(a));
  };
  auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(std::move(what));
  };

  std::vector<std::thread> workers;
  // CLI processes p = 0..3, all on c.t, one commit per process run.
  for (int p = 0; p < kProcesses; ++p) {
    workers.emplace_back([&, p] {
      for (int b = 0; b < kCommits; ++b) {
        auto r = RunSkade(tmp_, Args({"ingest", "c.t", "--sql", AppendSql(p, b), "--json"}));
        if (r.exit_code != 0) {
          fail("process " + std::to_string(p) + " batch " + std::to_string(b) + ": " + r.err);
          continue;
        }
        Json j = Json::parse(r.out, nullptr, false);
        if (j.is_discarded() || !j.contains("commit_seq")) {
          fail("unparsable ingest output: " + r.out);
          continue;
        }
        record({"c.t", p, b, Int(j, "added_records"), Int(j, "commit_seq"), Int(j, "snapshot_id")});
      }
    });
  }
  // In-process writers p = 10.. on c.t (even) and c.u (odd), sharing the catalog (group commit).
  for (int w = 0; w < kThreads; ++w) {
    workers.emplace_back([&, w] {
      int p = 10 + w;
      std::string name = w % 2 == 0 ? "c.t" : "c.u";
      auto t = Table::Load(catalog, *io_, *db_, *catalog::TableIdent::Parse(name));
      if (!t.ok()) {
        fail(t.status().ToString());
        return;
      }
      for (int b = 0; b < kCommits; ++b) {
        auto r = (*t)->Append({AppendSql(p, b), nullptr});
        if (!r.ok()) {
          fail(name + " thread " + std::to_string(w) + ": " + r.status().ToString());
          continue;
        }
        record({name, p, b, r->added_records, r->commit_seq, r->snapshot_id});
      }
    });
  }
  for (auto& th : workers) th.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  ASSERT_EQ(acks.size(), static_cast<size_t>((kProcesses + kThreads) * kCommits));

  // Expected (p, batch) → rows, per table; each acknowledged commit has its own commit_seq.
  std::map<std::string, std::map<std::pair<int, int>, int64_t>> expected;
  std::set<int64_t> ack_seqs;
  for (const Ack& a : acks) {
    EXPECT_EQ(a.rows, RowsFor(a.p, a.batch));
    expected[a.table][{a.p, a.batch}] = a.rows;
    EXPECT_TRUE(ack_seqs.insert(a.commit_seq).second)
        << "commit_seq " << a.commit_seq << " acknowledged twice";
  }
  const std::string group_query =
      "SELECT p, batch, count(*), count(DISTINCT i), min(i), max(i) FROM t GROUP BY p, batch ORDER "
      "BY p, batch";
  auto expected_rows = [&](const std::string& table) {
    std::vector<std::vector<std::string>> out;
    for (const auto& [key, n] : expected[table]) {
      out.push_back({std::to_string(key.first), std::to_string(key.second), std::to_string(n),
                     std::to_string(n), "0", std::to_string(n - 1)});
    }
    return out;
  };

  for (const std::string name : {"c.t", "c.u"}) {
    SCOPED_TRACE(name);
    // Through `skade sql` (another process)...
    std::string csv =
        Skade({"sql", "WITH t AS (SELECT * FROM " + name + ") " + group_query, "--format", "csv"});
    std::vector<std::string> lines = testing::Lines(csv);
    ASSERT_FALSE(lines.empty());
    lines.erase(lines.begin());  // header
    std::vector<std::vector<std::string>> got_cli;
    for (const auto& line : lines) {
      std::vector<std::string> fields;
      size_t start = 0;
      while (true) {
        size_t comma = line.find(',', start);
        fields.push_back(
            line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      got_cli.push_back(fields);
    }
    EXPECT_EQ(got_cli, expected_rows(name));
    // ...and through Table in this process.
    auto t = Table::Load(catalog, *io_, *db_, *catalog::TableIdent::Parse(name));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto rows = Query(**t, group_query);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<std::vector<std::string>> got;
    for (const auto& r : *rows) {
      std::vector<std::string> row;
      for (const auto& v : r) row.push_back(v.value_or("NULL"));
      got.push_back(row);
    }
    EXPECT_EQ(got, expected_rows(name));
    int64_t total = 0;
    for (const auto& [key, n] : expected[name]) total += n;
    EXPECT_EQ(*(*t)->Count({}), total);

    // Snapshots: exactly the acknowledged ones, a linear history with dense sequence numbers.
    Json snaps = Json::parse(Skade({"snapshots", name, "--json"}), nullptr, false);
    ASSERT_TRUE(snaps.is_array());
    std::set<int64_t> acked_ids, listed_ids;
    for (const Ack& a : acks) {
      if (a.table == name) acked_ids.insert(a.snapshot_id);
    }
    std::map<int64_t, Json> by_seq;
    for (const auto& s : snaps) {
      listed_ids.insert(Int(s, "snapshot_id"));
      by_seq[Int(s, "sequence_number")] = s;
    }
    EXPECT_EQ(snaps.size(), expected[name].size());
    EXPECT_EQ(listed_ids, acked_ids);
    ASSERT_EQ(by_seq.size(), snaps.size());
    int64_t seq = 0;
    std::optional<int64_t> parent;
    for (const auto& [sequence_number, s] : by_seq) {
      EXPECT_EQ(sequence_number, ++seq);
      if (parent) {
        EXPECT_EQ(Int(s, "parent_snapshot_id"), *parent);
      } else {
        EXPECT_FALSE(s.contains("parent_snapshot_id"));
      }
      parent = Int(s, "snapshot_id");
    }
  }

  // The commit log: commit_seq dense 1..N in order, creates then the acknowledged commits, each
  // entry continuing its table's metadata chain. The entries of one catalog commit that added
  // several snapshots (coalesced appends) share its metadata file, base and txn_id.
  Json log = Json::parse(Skade({"log", "--json", "--limit", "100000"}), nullptr, false);
  ASSERT_TRUE(log.is_array());
  ASSERT_EQ(log.size(), acks.size() + 2);
  std::map<std::string, std::string> last_metadata, last_previous, last_txn;
  int64_t last_us = 0;
  std::map<int64_t, const Json*> by_commit_seq;
  for (size_t k = 0; k < log.size(); ++k) {
    const Json& e = log[k];
    EXPECT_EQ(Int(e, "commit_seq"), static_cast<int64_t>(k + 1));
    EXPECT_GE(Int(e, "committed_at_us"), last_us);
    last_us = Int(e, "committed_at_us");
    std::string table = Str(e, "table");
    if (!last_metadata.count(table)) {
      EXPECT_EQ(Str(e, "operation"), "create");
    } else if (Str(e, "metadata_location") == last_metadata[table]) {
      EXPECT_EQ(Str(e, "previous_metadata_location"), last_previous[table]) << "commit " << k + 1;
      EXPECT_EQ(Str(e, "txn_id"), last_txn[table]) << "commit " << k + 1;
    } else {
      EXPECT_EQ(Str(e, "previous_metadata_location"), last_metadata[table]) << "commit " << k + 1;
    }
    last_metadata[table] = Str(e, "metadata_location");
    last_previous[table] = Str(e, "previous_metadata_location");
    last_txn[table] = Str(e, "txn_id");
    by_commit_seq[Int(e, "commit_seq")] = &e;
  }
  for (const Ack& a : acks) {
    auto it = by_commit_seq.find(a.commit_seq);
    ASSERT_NE(it, by_commit_seq.end()) << a.commit_seq;
    EXPECT_EQ(Str((*it->second), "table"), a.table);
    EXPECT_EQ(Int((*it->second), "snapshot_id"), a.snapshot_id);
    EXPECT_EQ(Str((*it->second), "operation"), "append");
    EXPECT_EQ(Int((*it->second), "added_records"), a.rows);
  }
}

// The content the crash test expects of one table: (batch, i) → v.
using Model = std::map<std::pair<int, int64_t>, int>;

// One operation a child runs against a table, and its effect on the model if it commits.
struct Operation {
  enum class Kind { kAppend, kDelete, kUpsert, kCompact } kind = Kind::kAppend;
  int batch = 0;      // append: the new batch; delete/upsert: the batch changed
  int64_t rows = 0;   // append/upsert: rows i in [0, rows)
  bool half = false;  // delete: only even i
  int value = 0;      // append: 0; upsert: the new v

  std::vector<std::string> Args(const std::string& table) const {
    std::string b = std::to_string(batch), n = std::to_string(rows);
    switch (kind) {
      case Kind::kAppend:
        return {"ingest", table, "--sql",
                "SELECT " + b + " AS batch, range AS i, 0 AS v FROM range(" + n + ")", "--json"};
      case Kind::kDelete:
        return {"delete", table, "--where", "batch = " + b + (half ? " AND i % 2 = 0" : ""),
                "--json"};
      case Kind::kUpsert:
        return {"ingest",
                table,
                "--mode",
                "upsert",
                "--key",
                "batch,i",
                "--sql",
                "SELECT " + b + " AS batch, range AS i, " + std::to_string(value) +
                    " AS v FROM range(" + n + ")",
                "--json"};
      case Kind::kCompact:
        return {"compact", table, "--json"};
    }
    return {};
  }

  void Apply(Model& model) const {
    switch (kind) {
      case Kind::kAppend:
        for (int64_t i = 0; i < rows; ++i) model[{batch, i}] = 0;
        break;
      case Kind::kDelete:
        for (auto it = model.begin(); it != model.end();) {
          bool hit = it->first.first == batch && (!half || it->first.second % 2 == 0);
          it = hit ? model.erase(it) : std::next(it);
        }
        break;
      case Kind::kUpsert:
        for (int64_t i = 0; i < rows; ++i) model[{batch, i}] = value;
        break;
      case Kind::kCompact:
        break;
    }
  }

  const char* name() const {
    switch (kind) {
      case Kind::kAppend:
        return "append";
      case Kind::kDelete:
        return "delete";
      case Kind::kUpsert:
        return "upsert";
      case Kind::kCompact:
        return "compact";
    }
    return "?";
  }
};

TEST_F(ProcessTest, KilledWritersLeaveConsistentTablesAndOnlyOrphans) {
  // 200 rounds whose child is SIGKILLed unless it finished first, plus, after every tenth, one
  // round run to completion that re-measures how long the operation takes. The sanitizer run
  // (several times slower) sets SKADE_CRASH_ROUNDS lower: it looks for memory errors, not for
  // more crash points.
  int kill_rounds = 200;
  if (const char* r = std::getenv("SKADE_CRASH_ROUNDS")) kill_rounds = std::max(10, std::atoi(r));
  const int kKillRounds = kill_rounds;
  constexpr int kRunToEndEvery = 10;
  const int kRounds = kKillRounds + kKillRounds / kRunToEndEvery;
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("SKADE_CRASH_SEED")) seed = std::strtoull(s, nullptr, 10);
  SCOPED_TRACE("SKADE_CRASH_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  Skade({"ns", "create", "c"});
  const std::vector<std::string> tables = {"c.plain", "c.part"};
  // Keep every metadata file in the metadata log, so "referenced" is exactly what this test
  // tracks (older entries would fall out of the log after 100 commits, and count as orphans).
  Skade({"create", "c.plain", "--schema", "batch INTEGER, i BIGINT, v INTEGER", "--prop",
         "write.metadata.previous-versions-max=100000"});
  Skade({"create", "c.part", "--schema", "batch INTEGER, i BIGINT, v INTEGER", "--partition-by",
         "bucket(4, i)", "--prop", "write.metadata.previous-versions-max=100000", "--prop",
         "write.delete.mode=merge-on-read"});

  std::map<std::string, Model> models;
  std::map<std::string, std::string> folders;
  {
    auto cat = OpenCatalog();
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    for (const auto& name : tables) {
      auto state = (*cat)->LoadTable(*catalog::TableIdent::Parse(name));
      ASSERT_TRUE(state.ok()) << state.status().ToString();
      folders[name] = Normal(state->metadata->location);
    }
  }
  std::map<std::string, std::set<std::string>> expected_orphans;
  // How far killed writers got: new files they left, by kind, and whether the commit landed.
  std::map<std::string, int> outcomes;
  int64_t expected_seq = 2;  // the two creates

  // Counts the table and (if `full`) reads it whole, comparing with the model.
  auto verify_table = [&](catalog::Catalog& catalog, const std::string& name, int round,
                          bool full) {
    SCOPED_TRACE(name + " after round " + std::to_string(round));
    auto t = Table::Load(catalog, *io_, *db_, *catalog::TableIdent::Parse(name));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const Model& model = models[name];
    auto count = (*t)->Count({});
    ASSERT_TRUE(count.ok()) << count.status().ToString();
    EXPECT_EQ(*count, static_cast<int64_t>(model.size()));
    if (!full) return;
    auto rows = Query(**t, "SELECT batch, i, v FROM t");
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    Model got;
    for (const auto& r : *rows) {
      ASSERT_EQ(r.size(), 3u);
      auto key = std::make_pair(static_cast<int>(ParseInt(r[0])), ParseInt(r[1]));
      EXPECT_TRUE(got.emplace(key, static_cast<int>(ParseInt(r[2]))).second)
          << "duplicate row " << key.first << "," << key.second;
    }
    EXPECT_TRUE(got == model) << "read " << got.size() << " rows, expected " << model.size();
  };

  // Kill delays follow each operation's measured duration D (milliseconds, moving average of
  // runs to completion): a skade process spends most of its life starting (DuckDB, catalog
  // open), so 85% of kills land in [0.6 D, 1.15 D] (DuckDB writing, manifests, catalog commit)
  // and 15% anywhere in [0, D].
  std::map<Operation::Kind, double> duration_ms;
  double child_seconds = 0, verify_seconds = 0;
  // A guard against the ctest timeout on a loaded machine: past it the rounds stop early (and
  // say so), provided enough ran to mean something; the final checks below still run.
  auto deadline = Clock::now() + std::chrono::seconds(150);
  constexpr int kMinRounds = 12;
  for (int round = 1; round <= kRounds; ++round) {
    if (Clock::now() >= deadline) {
      ASSERT_GT(round, kMinRounds) << "crash rounds too slow; only " << round - 1 << " ran";
      std::cout << "crash rounds stopped at the time guard after " << round - 1 << " of " << kRounds << std::endl;
      break;
    }
    // The first rounds (one per table) and every (kRunToEndEvery + 1)-th run to completion.
    const bool run_to_end = round <= 2 || round % (kRunToEndEvery + 1) == 0;
    const std::string& name = tables[round <= 2 ? round - 1 : uniform(0, 1)];
    Model& model = models[name];
    std::vector<int> batches;
    for (const auto& [key, v] : model) {
      if (batches.empty() || batches.back() != key.first) batches.push_back(key.first);
    }
    Operation op;
    int dice = uniform(0, 99);
    if (batches.empty() || round <= 2 || dice < 64) {
      op.kind = Operation::Kind::kAppend;
      op.batch = round;
      op.rows = uniform(1, 40);
    } else if (dice < 76) {
      op.kind = Operation::Kind::kDelete;
      op.batch = batches[uniform(0, static_cast<int>(batches.size()) - 1)];
      op.half = uniform(0, 1) == 1;
    } else if (dice < 88) {
      op.kind = Operation::Kind::kUpsert;
      op.batch = batches[uniform(0, static_cast<int>(batches.size()) - 1)];
      op.rows = uniform(1, 45);
      op.value = round;
    } else {
      op.kind = Operation::Kind::kCompact;
    }
    SCOPED_TRACE("round " + std::to_string(round) + ": " + op.name() + " on " + name);

    const std::set<std::string> before = ListFiles(folders[name]);
    double d = duration_ms.count(op.kind) ? duration_ms[op.kind]
                                          : duration_ms[Operation::Kind::kAppend] * 1.6;
    const int delay_ms = uniform(0, 99) < 15
                             ? uniform(0, static_cast<int>(d))
                             : uniform(static_cast<int>(d * 0.6), static_cast<int>(d * 1.15));
    const auto started = Clock::now();
    auto child = Child::Start(Args(op.Args(name)), tmp_.Path("crash.out"), tmp_.Path("crash.err"));
    ASSERT_NE(child, nullptr);
    bool finished = child->WaitFor(run_to_end ? kChildTimeout : milliseconds(delay_ms));
    if (!finished) child->Kill();
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    child_seconds += elapsed_ms / 1e3;
    if (run_to_end) {
      duration_ms[op.kind] =
          duration_ms.count(op.kind) ? 0.7 * duration_ms[op.kind] + 0.3 * elapsed_ms : elapsed_ms;
    }
    const auto verify_started = Clock::now();
    std::optional<Json> ack;
    if (finished) {
      ASSERT_TRUE(child->exited_normally());
      ASSERT_EQ(child->exit_code(), 0) << child->err();
      Json j = Json::parse(child->out(), nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << child->out();
      ack = j;
    }

    // The catalog opens (a fresh connection, as a new process would) and the log is dense.
    auto cat = OpenCatalog();
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    auto latest = (*cat)->LatestCommitSeq();
    ASSERT_TRUE(latest.ok()) << latest.status().ToString();
    auto fresh = (*cat)->CommitsSince(expected_seq, 10);
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    ASSERT_LE(fresh->size(), 1u) << "one writer made more than one commit";
    ASSERT_EQ(*latest, expected_seq + static_cast<int64_t>(fresh->size()));
    bool landed = fresh->size() == 1;
    if (landed) {
      const catalog::CommitLogEntry& e = fresh->front();
      EXPECT_EQ(e.commit_seq, expected_seq + 1);
      EXPECT_EQ(e.table.ToString(), name);
      expected_seq = e.commit_seq;
    }
    if (ack) {
      int64_t snapshot_id = Int((*ack), "snapshot_id");
      if (snapshot_id != 0) {
        // Acknowledged: it must be in the log with the commit_seq it reported.
        ASSERT_TRUE(landed) << child->out();
        EXPECT_EQ(Int((*ack), "commit_seq"), fresh->front().commit_seq);
        EXPECT_EQ(fresh->front().snapshot_id.value_or(0), snapshot_id);
      } else {
        EXPECT_FALSE(landed) << "\"nothing to commit\" committed something";
      }
    }
    if (landed) op.Apply(model);

    // Files: nothing that existed was removed; a writer whose commit did not land left only
    // orphans (classified by how far it got).
    const std::set<std::string> after = ListFiles(folders[name]);
    for (const auto& f : before) EXPECT_TRUE(after.count(f)) << "file vanished: " << f;
    std::set<FileKind> kinds;
    for (const auto& f : after) {
      if (before.count(f)) continue;
      kinds.insert(KindOf(f));
      // A writer killed while replacing version-hint.text (after its commit) leaves the
      // temporary file of that replacement.
      if (!landed || f.find("version-hint.text.tmp-") != std::string::npos) expected_orphans[name].insert(f);
    }
    if (!finished) {
      std::string phase = landed                                 ? "killed after the catalog commit"
                          : kinds.count(FileKind::kMetadataJson) ? "killed in the catalog commit"
                          : kinds.count(FileKind::kManifestList) ? "killed after the manifest list"
                          : kinds.count(FileKind::kManifest)     ? "killed while writing manifests"
                          : kinds.count(FileKind::kData)         ? "killed while writing data"
                                                                 : "killed before writing";
      ++outcomes[phase];
    } else {
      bool committed = ack && Int((*ack), "snapshot_id") != 0;
      ++outcomes[std::string(run_to_end ? "ran to completion" : "finished before the kill") +
                 (committed ? ", committed" : ", nothing to commit")];
    }
    // The table written is loaded and counted, and read whole when its pointer moved; every
    // tenth round both tables are read whole (kept short: a round whose commit did not land
    // changed no metadata any read uses).
    for (const auto& t : tables) {
      if (round % 10 == 0 || t == name) verify_table(**cat, t, round, round % 10 == 0 || landed);
    }
    if (HasFatalFailure()) return;
    verify_seconds += std::chrono::duration<double>(Clock::now() - verify_started).count();
  }
  for (const auto& [what, n] : outcomes) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "  children " << child_seconds << " s, checks " << verify_seconds
            << " s; append takes ~" << duration_ms[Operation::Kind::kAppend] << " ms\n";

  auto cat = OpenCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  // The whole log is dense 1..N.
  auto log = (*cat)->CommitsSince(0, 1'000'000);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(static_cast<int64_t>(log->size()), expected_seq);
  for (size_t k = 0; k < log->size(); ++k)
    EXPECT_EQ((*log)[k].commit_seq, static_cast<int64_t>(k + 1));

  // Orphans: files under the table folder that no metadata references, computed by walking the
  // metadata, must be exactly the files of writers whose commits did not land.
  std::this_thread::sleep_for(milliseconds(5));  // every file strictly older than `now`
  const int64_t now_ms = NowMillis();
  for (const auto& name : tables) {
    SCOPED_TRACE(name);
    auto state = (*cat)->LoadTable(*catalog::TableIdent::Parse(name));
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    const std::set<std::string> refs = ReferencedFiles(*io_, *state);
    const std::set<std::string> listed = ListFiles(folders[name]);
    std::set<std::string> orphans;
    for (const auto& f : listed) {
      if (!refs.count(f)) orphans.insert(f);
    }
    for (const auto& r : refs) EXPECT_TRUE(listed.count(r)) << "referenced file missing: " << r;
    EXPECT_EQ(orphans, expected_orphans[name]);
    std::cout << "  " << name << ": " << listed.size() << " files, " << orphans.size()
              << " orphans\n";

    auto t = Table::Load(**cat, *io_, *db_, *catalog::TableIdent::Parse(name));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto removed = (*t)->RemoveOrphanFiles(now_ms, Table::OrphanMode::kDelete);
    ASSERT_TRUE(removed.ok()) << removed.status().ToString();
    std::set<std::string> removed_set;
    for (const auto& f : removed->orphans) removed_set.insert(Normal(f));
    EXPECT_TRUE(removed->deleted);
    // Temporary files of killed writers are younger than an hour: they look like writes in
    // flight and stay, whatever the cutoff; every other orphan goes.
    std::set<std::string> expected_removed, expected_remaining = refs;
    for (const auto& f : orphans) (io::IsTemporaryWrite(f) ? expected_remaining : expected_removed).insert(f);
    EXPECT_EQ(removed_set, expected_removed);
    std::set<std::string> remaining = ListFiles(folders[name]);
    EXPECT_EQ(remaining, expected_remaining);
    verify_table(**cat, name, kRounds, true);
  }
}

}  // namespace
}  // namespace skade::table
