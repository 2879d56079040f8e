// metadata_bench: what one commit's metadata work costs as a table's history grows (issue 15,
// part 3). For tables of N snapshots shaped like skade's one-row appends (a 12-key summary, an
// absolute manifest-list path), one commit that adds a snapshot and moves main to it: the next
// metadata (ApplyUpdates) and its JSON (TableMetadataToJson), as the catalog makes them. Beside
// it, in the same run and process:
//   - "unshared": the same commit when every snapshot is a copy of its own that was never
//     rendered (what each commit cost before snapshots were shared between metadata versions);
//   - "write+fsync": writing those bytes to a new file and fsyncing it, which the format asks of
//     every commit whatever the CPU side costs.
// Prints medians (ms) and the ratio unshared / shared.
//   metadata_bench [--snapshots 100,1000,4000,20000] [--repeat 15] [--dir /tmp]
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/table_update.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;
using iceberg::Snapshot;
using iceberg::TableMetadata;
using iceberg::TableUpdate;

constexpr int64_t kStartMs = 1796289663745;

Snapshot AppendSnapshot(const std::string& location, int64_t seq, std::optional<int64_t> parent) {
  Snapshot s;
  s.snapshot_id = 1000000007 * seq + 17;
  s.parent_snapshot_id = parent;
  s.sequence_number = seq;
  s.timestamp_ms = kStartMs + seq;
  s.schema_id = 0;
  s.manifest_list = location + "/metadata/snap-" + std::to_string(s.snapshot_id) +
                    "-1-01a23b35-1301-72f2-951a-f0a7a249ec45.avro";
  s.summary = {{"operation", "append"},
               {"added-data-files", "1"},
               {"added-records", "1"},
               {"added-files-size", "319"},
               {"changed-partition-count", "1"},
               {"total-records", std::to_string(seq)},
               {"total-files-size", std::to_string(seq * 319)},
               {"total-data-files", std::to_string(seq)},
               {"total-delete-files", "0"},
               {"total-position-deletes", "0"},
               {"total-equality-deletes", "0"},
               {"engine-name", "skade"}};
  return s;
}

// A table of `snapshots` appends, each once main's head (so the snapshot log has them all).
Result<TableMetadata> TableOf(int64_t snapshots) {
  const std::string location = "/var/lib/skade/warehouse/bench/t0";
  const std::string doc = R"({"format-version":2,"table-uuid":"4e5f3a8c-6c4b-4f0e-9a43-0d7a3c1e2b11","location":")" +
                          location + R"(","last-sequence-number":0,"last-updated-ms":)" + std::to_string(kStartMs) +
                          R"(,"last-column-id":2,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[)"
                          R"({"id":1,"name":"w","required":false,"type":"int"},{"id":2,"name":"c","required":false,"type":"int"}]}],)"
                          R"("default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,)"
                          R"("default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{}})";
  SKADE_ASSIGN_OR_RETURN(TableMetadata m, iceberg::ParseTableMetadata(doc));
  std::optional<int64_t> parent;
  for (int64_t seq = 1; seq <= snapshots; ++seq) {
    Snapshot s = AppendSnapshot(location, seq, parent);
    parent = s.snapshot_id;
    m.snapshot_log.push_back({s.timestamp_ms, s.snapshot_id});
    m.snapshots.push_back(std::move(s));
  }
  m.last_sequence_number = snapshots;
  m.current_snapshot_id = parent;
  if (parent) m.refs["main"] = iceberg::SnapshotRef{*parent, iceberg::RefType::kBranch, {}, {}, {}};
  for (int i = 0; i < 100; ++i) {  // previous-versions-max's worth of metadata log
    m.metadata_log.push_back({kStartMs + i, location + "/metadata/" + std::to_string(i) + ".metadata.json"});
  }
  return m;
}

// One commit on `base`: the next metadata and its JSON.
Result<std::string> Commit(const TableMetadata& base) {
  Snapshot s = AppendSnapshot(base.location, base.last_sequence_number + 1, base.current_snapshot_id);
  const int64_t id = s.snapshot_id;
  SKADE_ASSIGN_OR_RETURN(TableMetadata next, iceberg::ApplyUpdates(base, base.location + "/metadata/base.metadata.json",
                                                                   {TableUpdate::AddSnapshot(std::move(s)),
                                                                    TableUpdate::SetBranch("main", id)},
                                                                   kStartMs + 1000000000));
  return iceberg::TableMetadataToJson(next);
}

// `base` with a never-rendered copy of each snapshot.
TableMetadata Unshared(const TableMetadata& base) {
  TableMetadata copy = base;
  copy.snapshots.clear();
  copy.snapshots.reserve(base.snapshots.size());
  for (const Snapshot& s : base.snapshots) copy.snapshots.push_back(s);
  return copy;
}

Status WriteAndSync(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot create " + path);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      return Status::IoError("cannot write " + path);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  ::unlink(path.c_str());
  return synced ? Status::Ok() : Status::IoError("cannot fsync " + path);
}

Status Run(const std::vector<int64_t>& sizes, int repeat, const std::string& dir) {
  std::printf("| snapshots | metadata bytes | shared (ms) | unshared (ms) | unshared / shared | write+fsync (ms) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int64_t n : sizes) {
    SKADE_ASSIGN_OR_RETURN(TableMetadata base, TableOf(n));
    SKADE_ASSIGN_OR_RETURN(std::string warm, Commit(base));  // the previous commit rendered base
    std::vector<double> shared, unshared, written;
    size_t bytes = 0;
    for (int r = 0; r < repeat; ++r) {
      // Alternated, so load on the machine falls on both alike.
      double start = NowSeconds();
      SKADE_ASSIGN_OR_RETURN(std::string a, Commit(base));
      shared.push_back((NowSeconds() - start) * 1e3);
      start = NowSeconds();
      SKADE_ASSIGN_OR_RETURN(std::string b, Commit(Unshared(base)));
      unshared.push_back((NowSeconds() - start) * 1e3);
      if (a != b) return Status::Internal("shared and unshared snapshots rendered different metadata");
      bytes = a.size();
      start = NowSeconds();
      SKADE_RETURN_IF_ERROR(WriteAndSync(dir + "/metadata_bench_" + std::to_string(::getpid()) + ".json", a));
      written.push_back((NowSeconds() - start) * 1e3);
    }
    const double s = Median(shared), u = Median(unshared);
    std::printf("| %lld | %zu | %.3f | %.3f | %.1f | %.3f |\n", static_cast<long long>(n), bytes, s, u, u / s,
                Median(written));
    std::fflush(stdout);
  }
  return Status::Ok();
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) {
  CLI::App app{"metadata_bench: a commit's metadata cost against the table's history"};
  std::vector<int64_t> sizes = {100, 1000, 4000, 20000};
  int repeat = 15;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--snapshots", sizes, "history sizes")->delimiter(',');
  app.add_option("--repeat", repeat, "commits measured per size")->check(CLI::PositiveNumber);
  app.add_option("--dir", dir, "folder for the write+fsync baseline")->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);
  skade::Status st = skade::bench::Run(sizes, repeat, dir);
  if (!st.ok()) {
    std::cerr << st.ToString() << "\n";
    return 1;
  }
  return 0;
}
