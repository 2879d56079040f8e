// events_bench: commit → subscriber latency of the commit event stream, in process
// (ReplayThenTail on the Bus fed by the Watcher) and over gRPC on loopback (CommitServer +
// CommitClient), over sequential commits on a SQLite catalog; then the replay drain rate from
// the durable log. See bench/RESULTS.md.
//   events_bench [--commits 10000] [--dir /tmp/x]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/clock.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/events/bus.h"
#include "skade/events/commit_client.h"
#include "skade/events/commit_service.h"
#include "skade/events/replay.h"
#include "skade/events/watcher.h"
#include "skade/io/file_io.h"

namespace {

using namespace std::chrono_literals;
using skade::Result;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

void Report(const char* what, const std::vector<double>& us) {
  std::printf("%-44s n=%zu p50=%.1f us p99=%.1f us max=%.1f us\n", what, us.size(),
              Percentile(us, 0.5), Percentile(us, 0.99), Percentile(us, 1.0));
}

int Run(int commits, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto io = skade::io::MakeLocalFileIO();
  skade::catalog::SqlCatalogOptions options;
  options.uri = "sqlite://" + dir + "/catalog.db";
  options.warehouse = dir + "/warehouse";
  auto catalog = skade::catalog::OpenSqlCatalog(options, *io);
  if (!catalog.ok()) return 1;
  skade::catalog::Catalog& cat = **catalog;
  skade::catalog::Namespace ns{{"bench"}};
  if (!cat.CreateNamespace(ns, {}).ok()) return 1;
  skade::catalog::CreateTableRequest request;
  skade::iceberg::NestedField id;
  id.id = 1;
  id.name = "id";
  id.required = true;
  id.type = skade::iceberg::Type::Primitive(skade::iceberg::TypeId::kLong);
  request.schema = std::make_shared<const skade::iceberg::Schema>(0, std::vector{id});
  // Few previous metadata versions keep each metadata file small and constant.
  request.properties["write.metadata.previous-versions-max"] = "5";
  skade::catalog::TableIdent table{ns, "t"};
  if (!cat.CreateTable(table, request).ok()) return 1;

  skade::events::Bus bus;
  auto watcher = skade::events::Watcher::Start(cat, options.uri, bus);
  if (!watcher.ok()) return 1;
  auto server = skade::events::CommitServer::Start(cat, bus, "127.0.0.1", 0);
  if (!server.ok()) return 1;
  auto client = skade::events::CommitClient::Connect("127.0.0.1:" + std::to_string((*server)->port()));
  if (!client.ok()) return 1;

  const int64_t base = *cat.LatestCommitSeq();
  std::vector<int64_t> returned_ns(commits, 0);   // monotonic time CommitTable returned
  std::vector<int64_t> committed_us(commits, 0);  // the log row's committed_at_us (wall)
  std::vector<int64_t> local_ns(commits, 0), local_wall_us(commits, 0);
  std::vector<int64_t> grpc_ns(commits, 0), grpc_wall_us(commits, 0);

  auto local_stream = skade::events::ReplayThenTail::Open(cat, bus, base, {});
  if (!local_stream.ok()) return 1;
  std::thread local([&] {
    while ((*local_stream)->cursor() < base + commits) {
      auto next = (*local_stream)->Next(100ms);
      if (!next.ok()) return;
      if (!next->has_value()) continue;
      int64_t i = (**next).commit_seq - base - 1;
      local_ns[i] = skade::MonotonicNanos();
      local_wall_us[i] = skade::NowMicros();
      committed_us[i] = (**next).committed_at_us;
    }
  });
  auto grpc_stream = (*client)->Subscribe(base, {}, 0ms);
  if (!grpc_stream.ok()) return 1;
  std::thread remote([&] {
    for (int n = 0; n < commits; ++n) {
      auto next = (*grpc_stream)->Next();
      if (!next.ok() || !next->has_value()) return;
      int64_t i = (**next).commit_seq - base - 1;
      grpc_ns[i] = skade::MonotonicNanos();
      grpc_wall_us[i] = skade::NowMicros();
    }
  });
  std::this_thread::sleep_for(200ms);  // the gRPC stream is established

  skade::catalog::TableCommit commit;
  commit.ident = table;
  auto start = std::chrono::steady_clock::now();
  std::vector<double> commit_us;
  for (int i = 0; i < commits; ++i) {
    commit.updates = {skade::iceberg::TableUpdate::SetProperties({{"k", std::to_string(i)}})};
    int64_t t0 = skade::MonotonicNanos();
    auto result = cat.CommitTable(commit);
    int64_t t1 = skade::MonotonicNanos();
    if (!result.ok()) {
      std::fprintf(stderr, "commit failed: %s\n", result.status().ToString().c_str());
      return 1;
    }
    returned_ns[result->commit_seq - base - 1] = t1;
    commit_us.push_back((t1 - t0) / 1000.0);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  local.join();
  remote.join();
  std::printf("%d sequential commits in %.2f s (%.0f commits/s), SQLite WAL synchronous=FULL\n",
              commits, seconds, commits / seconds);
  Report("CommitTable latency", commit_us);
  // (a) from the log row's timestamp (taken inside the transaction, before COMMIT + fsync)
  // (b) from CommitTable returning to the committer; an event that arrives before the
  //     committer regains control counts as 0.
  std::vector<double> local_a, local_b, grpc_a, grpc_b;
  for (int i = 0; i < commits; ++i) {
    local_a.push_back(static_cast<double>(local_wall_us[i] - committed_us[i]));
    local_b.push_back(std::max<double>(0, (local_ns[i] - returned_ns[i]) / 1000.0));
    grpc_a.push_back(static_cast<double>(grpc_wall_us[i] - committed_us[i]));
    grpc_b.push_back(std::max<double>(0, (grpc_ns[i] - returned_ns[i]) / 1000.0));
  }
  Report("in process: log row time -> subscriber", local_a);
  Report("in process: commit returned -> subscriber", local_b);
  Report("gRPC loopback: log row time -> subscriber", grpc_a);
  Report("gRPC loopback: commit returned -> subscriber", grpc_b);

  // Replay drain rate: a subscriber starting at 0 reads the whole log.
  for (int64_t batch : {1024, 8192}) {
    auto replay = skade::events::ReplayThenTail::Open(cat, bus, 0, {.replay_batch = batch});
    if (!replay.ok()) return 1;
    int64_t head = *cat.LatestCommitSeq();
    auto t0 = std::chrono::steady_clock::now();
    while ((*replay)->cursor() < head) {
      auto next = (*replay)->Next(100ms);
      if (!next.ok()) return 1;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("replay drain, batch %5lld: %lld events in %.3f s = %.0f events/s\n",
                static_cast<long long>(batch), static_cast<long long>(head), s, head / s);
  }
  (*server)->Shutdown();
  watcher->reset();
  fs::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"events_bench: commit event latency and replay rate"};
  int commits = 10000;
  std::string dir = (std::filesystem::temp_directory_path() / "skade_events_bench").string();
  app.add_option("--commits", commits, "sequential commits");
  app.add_option("--dir", dir, "scratch folder (removed)");
  CLI11_PARSE(app, argc, argv);
  return Run(commits, dir);
}
