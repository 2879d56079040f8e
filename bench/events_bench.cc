// events_bench: commit → subscriber latency of the commit event stream, in process
// (ReplayThenTail on the Bus fed by the Watcher) and over gRPC on loopback (CommitServer +
// CommitClient), over sequential commits on a SQLite catalog; then the replay drain rate from
// the durable log. `--mode blocking` instead measures whether subscribers slow the writer: commit
// latency with 0 and with N slow subscribers in alternating rounds of one run, and the bus's
// publish cost alone. See bench/RESULTS.md.
//   events_bench [--mode latency|blocking] [--commits 10000] [--dir /tmp/x]
//                [--subscribers 100] [--sleep-us 1000] [--rounds 4]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
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

skade::catalog::TableIdent BenchTable() {
  return skade::catalog::TableIdent{skade::catalog::Namespace{{"bench"}}, "t"};
}

void Report(const char* what, const std::vector<double>& us) {
  std::printf("%-44s n=%zu p50=%.1f us p99=%.1f us max=%.1f us\n", what, us.size(),
              Percentile(us, 0.5), Percentile(us, 0.99), Percentile(us, 1.0));
}

struct BenchCatalog {
  std::string uri;
  std::unique_ptr<skade::catalog::Catalog> catalog;  // null if it could not be set up
};

// A SQLite catalog in `dir` (emptied first) with table bench.t.
BenchCatalog OpenBenchCatalog(const std::string& dir, skade::io::FileIO& io) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir);
  skade::catalog::SqlCatalogOptions options;
  options.uri = "sqlite://" + dir + "/catalog.db";
  options.warehouse = dir + "/warehouse";
  BenchCatalog out{options.uri, nullptr};
  auto catalog = skade::catalog::OpenSqlCatalog(options, io);
  if (!catalog.ok()) return out;
  skade::catalog::Catalog& cat = **catalog;
  skade::catalog::Namespace ns{{"bench"}};
  if (!cat.CreateNamespace(ns, {}).ok()) return out;
  skade::catalog::CreateTableRequest request;
  skade::iceberg::NestedField id;
  id.id = 1;
  id.name = "id";
  id.required = true;
  id.type = skade::iceberg::Type::Primitive(skade::iceberg::TypeId::kLong);
  request.schema = std::make_shared<const skade::iceberg::Schema>(0, std::vector{id});
  // Few previous metadata versions keep each metadata file small and constant.
  request.properties["write.metadata.previous-versions-max"] = "5";
  if (!cat.CreateTable(BenchTable(), request).ok()) return out;
  out.catalog = std::move(catalog).value();
  return out;
}

int Run(int commits, const std::string& dir) {
  namespace fs = std::filesystem;
  auto io = skade::io::MakeLocalFileIO();
  BenchCatalog bench = OpenBenchCatalog(dir, *io);
  if (!bench.catalog) return 1;
  skade::catalog::Catalog& cat = *bench.catalog;
  const skade::catalog::TableIdent table = BenchTable();

  skade::events::Bus bus;
  auto watcher = skade::events::Watcher::Start(cat, bench.uri, bus);
  if (!watcher.ok()) return 1;
  auto server = skade::events::CommitServer::Start(cat, bus, "127.0.0.1", 0);
  if (!server.ok()) return 1;
  auto client =
      skade::events::CommitClient::Connect("127.0.0.1:" + std::to_string((*server)->port()));
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
  auto grpc_stream = (*client)->Subscribe(base, {}, 0ms, false);
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

// `count` threads, each following the commit stream like a slow client: ReplayThenTail from the
// head, sleeping `sleep` after every event, until Stop. Each checks it sees commit_seq in steps
// of one.
class SlowSubscribers {
 public:
  SlowSubscribers(skade::catalog::Catalog& catalog, skade::events::Bus& bus, int count,
                  std::chrono::microseconds sleep) {
    std::atomic<int> started{0};
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, &catalog, &bus, &started, sleep] {
        auto stream = skade::events::ReplayThenTail::Open(catalog, bus, std::nullopt, {});
        started.fetch_add(1);
        if (!stream.ok()) {
          errors_.fetch_add(1);
          return;
        }
        int64_t previous = (*stream)->cursor();
        while (!stop_.load()) {
          auto next = (*stream)->Next(20ms);
          if (!next.ok()) {
            errors_.fetch_add(1);
            return;
          }
          if (!next->has_value()) continue;
          if ((**next).commit_seq != previous + 1) errors_.fetch_add(1);
          previous = (**next).commit_seq;
          events_.fetch_add(1);
          std::this_thread::sleep_for(sleep);
        }
        recoveries_.fetch_add((*stream)->recoveries());
        cursor_sum_.fetch_add((*stream)->cursor());
      });
    }
    while (started.load() < count) std::this_thread::sleep_for(1ms);
  }
  ~SlowSubscribers() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  int64_t events() const { return events_.load(); }
  int64_t recoveries() const { return recoveries_.load(); }
  int64_t errors() const { return errors_.load(); }
  // Mean commit_seq the subscribers had reached when stopped.
  double mean_cursor() const {
    return threads_.empty() ? 0 : static_cast<double>(cursor_sum_.load()) / threads_.size();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> events_{0};
  std::atomic<int64_t> recoveries_{0};
  std::atomic<int64_t> errors_{0};
  std::atomic<int64_t> cursor_sum_{0};
  std::vector<std::thread> threads_;
};

// "Writer never blocks" (issue #4): sequential CommitTable latency with 0 and with `subscribers`
// slow subscribers, in `rounds` alternating rounds of one run (so drift of the shared machine
// hits both alike); then Bus::Publish alone, with and without the same subscribers on the ring.
int RunBlocking(int commits, const std::string& dir, int subscribers, int sleep_us, int rounds) {
  namespace fs = std::filesystem;
  auto io = skade::io::MakeLocalFileIO();
  BenchCatalog bench = OpenBenchCatalog(dir, *io);
  if (!bench.catalog) return 1;
  skade::catalog::Catalog& cat = *bench.catalog;
  skade::events::Bus bus;
  auto watcher = skade::events::Watcher::Start(cat, bench.uri, bus);
  if (!watcher.ok()) return 1;
  const auto sleep = std::chrono::microseconds(sleep_us);

  skade::catalog::TableCommit commit;
  commit.ident = BenchTable();
  int serial = 0;
  auto commit_once = [&]() -> double {
    commit.updates = {
        skade::iceberg::TableUpdate::SetProperties({{"k", std::to_string(serial++)}})};
    int64_t t0 = skade::MonotonicNanos();
    auto result = cat.CommitTable(commit);
    int64_t t1 = skade::MonotonicNanos();
    if (!result.ok()) {
      std::fprintf(stderr, "commit failed: %s\n", result.status().ToString().c_str());
      return -1;
    }
    return (t1 - t0) / 1000.0;
  };
  for (int i = 0; i < 50; ++i) {
    if (commit_once() < 0) return 1;  // warm-up: caches, WAL
  }

  std::printf(
      "writer never blocks: %d sequential commits per configuration in %d alternating "
      "rounds; %d subscribers sleeping %d us per event\n",
      commits, rounds, subscribers, sleep_us);
  std::vector<double> alone_us, watched_us;
  int64_t events = 0, recoveries = 0, errors = 0;
  double behind = 0;
  const int per_round = std::max(1, commits / rounds);
  for (int round = 0; round < rounds; ++round) {
    for (int phase = 0; phase < 2; ++phase) {
      bool watched = (phase == 1) == (round % 2 == 0);
      std::unique_ptr<SlowSubscribers> subs;
      if (watched) {
        subs = std::make_unique<SlowSubscribers>(cat, bus, subscribers, sleep);
        std::this_thread::sleep_for(100ms);  // all are waiting on the bus
      }
      std::vector<double>& samples = watched ? watched_us : alone_us;
      for (int i = 0; i < per_round; ++i) {
        double us = commit_once();
        if (us < 0) return 1;
        samples.push_back(us);
      }
      if (subs) {
        int64_t head = *cat.LatestCommitSeq();
        subs->Stop();
        events += subs->events();
        recoveries += subs->recoveries();
        errors += subs->errors();
        behind += (static_cast<double>(head) - subs->mean_cursor()) / rounds;
      }
    }
  }
  double p50_ratio = Percentile(watched_us, 0.5) / Percentile(alone_us, 0.5);
  double p99_ratio = Percentile(watched_us, 0.99) / Percentile(alone_us, 0.99);
  Report("CommitTable, 0 subscribers", alone_us);
  Report("CommitTable, slow subscribers", watched_us);
  std::printf(
      "ratio slow/0: p50 %.2f, p99 %.2f; subscribers received %lld events, were %.0f "
      "commits behind the head at the end of a round (mean), %lld lag recoveries, %lld "
      "order errors\n",
      p50_ratio, p99_ratio, static_cast<long long>(events), behind,
      static_cast<long long>(recoveries), static_cast<long long>(errors));
  watcher->reset();

  // The bus alone: what the commit listener adds to the writer, without disk noise. Publishes
  // are paced (~100 us apart) so the subscribers fall behind, catch up and wait as in real use.
  constexpr int kPublishes = 20000;
  std::vector<skade::events::CommitEvent> prepared;
  for (int64_t seq = 1; seq <= kPublishes * 2; ++seq) {
    skade::catalog::CommitLogEntry entry;
    entry.commit_seq = seq;
    entry.table = BenchTable();
    entry.operation = "update";
    prepared.push_back(skade::events::CommitEvent::FromLogEntry(entry));
  }
  skade::events::Bus ring;
  std::vector<double> publish_alone, publish_watched;
  for (int phase = 0; phase < 2; ++phase) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> readers;
    if (phase == 1) {
      for (int i = 0; i < subscribers; ++i) {
        readers.emplace_back([&] {
          skade::events::Subscription sub = ring.Subscribe();
          while (!stop.load()) {
            if (sub.receiver.Next(20ms).kind == skade::events::Received::Kind::kEvent) {
              std::this_thread::sleep_for(sleep);
            }
          }
        });
      }
      while (ring.subscriber_count() < subscribers) std::this_thread::sleep_for(1ms);
    }
    std::vector<double>& samples = phase == 1 ? publish_watched : publish_alone;
    for (int i = 0; i < kPublishes; ++i) {
      skade::events::CommitEvent event = prepared[static_cast<size_t>(phase * kPublishes + i)];
      int64_t t0 = skade::MonotonicNanos();
      bool published = ring.Publish(std::move(event));
      int64_t t1 = skade::MonotonicNanos();
      if (!published) return 1;
      samples.push_back((t1 - t0) / 1000.0);
      std::this_thread::sleep_for(100us);
    }
    stop = true;
    for (std::thread& t : readers) t.join();
  }
  Report("Bus::Publish, 0 subscribers", publish_alone);
  Report("Bus::Publish, slow subscribers", publish_watched);
  std::printf("ratio slow/0: p50 %.2f, p99 %.2f\n",
              Percentile(publish_watched, 0.5) / Percentile(publish_alone, 0.5),
              Percentile(publish_watched, 0.99) / Percentile(publish_alone, 0.99));
  fs::remove_all(dir);
  return errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"events_bench: commit event latency and replay rate"};
  std::string mode = "latency";
  int commits = 10000;
  int subscribers = 100;
  int sleep_us = 1000;
  int rounds = 4;
  std::string dir = (std::filesystem::temp_directory_path() / "skade_events_bench").string();
  app.add_option("--mode", mode,
                 "latency (commit -> subscriber, replay rate) or blocking "
                 "(commit latency with 0 vs slow subscribers)")
      ->check(CLI::IsMember({"latency", "blocking"}));
  app.add_option("--commits", commits, "sequential commits (blocking: per configuration)");
  app.add_option("--dir", dir, "scratch folder (removed)");
  app.add_option("--subscribers", subscribers, "blocking: slow subscribers");
  app.add_option("--sleep-us", sleep_us, "blocking: each subscriber's sleep per event");
  app.add_option("--rounds", rounds, "blocking: alternating rounds");
  CLI11_PARSE(app, argc, argv);
  if (mode == "blocking")
    return RunBlocking(commits, dir, subscribers, sleep_us, std::max(1, rounds));
  return Run(commits, dir);
}
