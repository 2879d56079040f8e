// plan_bench: scan planning over a large (generated, usually fake-data-file) table. Measures
// `skade scan --count` (the CLI path: counts from manifest metadata, no data file opened),
// ScanPlanner::CountFromManifests, PlanAll without and with selective filters, and streaming
// PlanFiles, each with its peak RSS growth (VmHWM reset before every phase).
//   plan_bench --table /tmp/p [--repeat 3] [--where 'id < 1000']
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_table.h"
#include "bench/bench_util.h"
#include "skade/cli/commands.h"
#include "skade/cli/table_location.h"
#include "skade/engine/database.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/avro.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"

namespace skade::bench {
namespace {

struct Phase {
  std::string name;
  std::vector<double> seconds;
  int64_t peak_growth_kb = 0;  // max over repetitions of VmHWM − RSS at start
  std::string detail;
};

// --only: run just the phases whose name contains it (for profiling one of them).
std::string g_only;

void Report(const Phase& p) {
  if (p.seconds.empty()) return;
  std::cout << p.name << ": median " << Median(p.seconds) * 1000 << " ms over " << p.seconds.size()
            << " runs, peak RSS growth " << p.peak_growth_kb / 1024.0 << " MiB";
  if (!p.detail.empty()) std::cout << ", " << p.detail;
  std::cout << "\n";
}

// Runs `body` `repeat` times, timing each run and tracking the RSS high-water mark.
template <typename F>
Status Measure(Phase* phase, int repeat, F body) {
  if (!g_only.empty() && phase->name.find(g_only) == std::string::npos) return Status::Ok();
  for (int rep = 0; rep < repeat; ++rep) {
    ResetPeakRss();
    int64_t rss = ProcStatusKb("VmRSS");
    double start = NowSeconds();
    SKADE_RETURN_IF_ERROR(body());
    phase->seconds.push_back(NowSeconds() - start);
    phase->peak_growth_kb = std::max(phase->peak_growth_kb, ProcStatusKb("VmHWM") - rss);
  }
  return Status::Ok();
}

int Fail(const Status& st) {
  std::cerr << "plan_bench: " << st.ToString() << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"Scan planning and manifest-only counts on a large table"};
  std::string table;
  int repeat = 3;
  std::vector<std::string> wheres;
  app.add_option("--table", table, "table folder")->required();
  app.add_option("--repeat", repeat, "repetitions per phase")->capture_default_str();
  app.add_option("--where", wheres, "selective filters to plan with (DuckDB SQL), may repeat");
  app.add_option("--only", g_only, "run only the phases whose name contains this text");
  CLI11_PARSE(app, argc, argv);

  std::cout << "start: RSS " << ProcStatusKb("VmRSS") / 1024.0 << " MiB\n";

  // 1. The CLI's `skade scan TABLE --count -v` in process (loads metadata, opens DuckDB,
  // counts from the manifest list). The data files do not exist for a fake table, so a
  // correct answer proves none was opened.
  Phase cli_count{"skade scan --count (cli::RunScan)", {}, 0, ""};
  Status st = Measure(&cli_count, repeat, [&]() -> Status {
    cli::ScanArgs args;
    args.table = table;
    args.count = true;
    args.verbose = true;
    std::ostringstream out, err;
    if (cli::RunScan(args, out, err) != 0) return Status::Internal("RunScan failed: " + err.str());
    std::string text = out.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    cli_count.detail = "count=" + text + " (" + err.str().substr(0, err.str().size() - 1) + ")";
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  Report(cli_count);

  auto opened = OpenCurrentSnapshot(table);
  if (!opened.ok()) return Fail(opened.status());
  const cli::LoadedTable& t = (*opened)->table;
  io::FileIO* table_io = (*opened)->table_io.get();
  const iceberg::Snapshot& snapshot = *(*opened)->snapshot;
  const iceberg::Schema& schema = *(*opened)->schema;

  // 2. CountFromManifests alone.
  Phase count{"CountFromManifests", {}, 0, ""};
  st = Measure(&count, repeat, [&]() -> Status {
    iceberg::ScanPlanner planner(*table_io, t.metadata);
    SKADE_ASSIGN_OR_RETURN(auto counts, planner.CountFromManifests(snapshot));
    count.detail = std::to_string(counts.record_count) + " rows in " +
                   std::to_string(counts.data_files) + " data files";
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  Report(count);

  // 3. Decoding every data manifest: into generic Avro values (what the reader did before the
  // typed decoder, without even converting them), and with the typed ManifestReader decoding
  // every field and metric; both on one thread. µs per entry = median / entries.
  iceberg::ScanPlanner lister(*table_io, t.metadata);
  auto manifests = lister.LoadManifests(snapshot);
  if (!manifests.ok()) return Fail(manifests.status());
  auto per_entry = [](const Phase& p, int64_t entries) {
    return std::to_string(entries) + " entries, " + std::to_string(Median(p.seconds) * 1e6 / static_cast<double>(entries)) +
           " us/entry";
  };
  // Decodes every data manifest with `decode` (which returns the entries of one) as a phase.
  auto decode_phase = [&](const std::string& name,
                          const std::function<Result<int64_t>(const iceberg::ManifestFile&)>& decode) -> Status {
    Phase phase{name, {}, 0, ""};
    int64_t entries = 0;
    SKADE_RETURN_IF_ERROR(Measure(&phase, repeat, [&]() -> Status {
      entries = 0;
      for (const iceberg::ManifestFile& m : *manifests) {
        SKADE_ASSIGN_OR_RETURN(int64_t n, decode(m));
        entries += n;
      }
      return Status::Ok();
    }));
    if (entries > 0) phase.detail = per_entry(phase, entries);
    Report(phase);
    return Status::Ok();
  };
  st = decode_phase("generic Avro decode (AvroValue), 1 thread", [&](const iceberg::ManifestFile& m) -> Result<int64_t> {
    SKADE_ASSIGN_OR_RETURN(std::string bytes, table_io->Read(m.manifest_path));
    SKADE_ASSIGN_OR_RETURN(auto reader, iceberg::avro::FileReader::Open(std::move(bytes), m.manifest_path));
    int64_t n = 0;
    while (true) {
      SKADE_ASSIGN_OR_RETURN(auto row, reader->Next());
      if (!row) return n;
      ++n;
    }
  });
  if (!st.ok()) return Fail(st);
  st = decode_phase("typed ManifestReader, all fields and metrics, 1 thread",
                    [&](const iceberg::ManifestFile& m) -> Result<int64_t> {
                      SKADE_ASSIGN_OR_RETURN(auto reader, iceberg::ManifestReader::Open(*table_io, m.manifest_path, m));
                      int64_t n = 0;
                      while (true) {
                        SKADE_ASSIGN_OR_RETURN(auto entry, reader->Next());
                        if (!entry) return n;
                        ++n;
                      }
                    });
  if (!st.ok()) return Fail(st);

  // 4. Per filter: streaming PlanFiles (each task dropped at once) on one thread and on the
  // default threads, then PlanAll.
  auto db = engine::Database::Open({});
  if (!db.ok()) return Fail(db.status());
  std::vector<std::string> filters = {""};
  filters.insert(filters.end(), wheres.begin(), wheres.end());
  for (const std::string& where : filters) {
    iceberg::ExprPtr filter;
    if (!where.empty()) {
      auto predicate = engine::Predicate::Parse(where);
      if (!predicate.ok()) return Fail(predicate.status());
      auto f = engine::SqlToIcebergFilter(**db, *predicate, schema);
      if (!f.ok()) return Fail(f.status());
      filter = *f;
    }
    std::string label = where.empty() ? "no filter" : "WHERE " + where;
    for (int threads : {1, 0}) {
      Phase stream{"PlanFiles (streaming sink), " + std::string(threads == 1 ? "1 thread" : "default threads") +
                       ", " + label,
                   {}, 0, ""};
      int64_t entries = 0;
      st = Measure(&stream, repeat, [&]() -> Status {
        iceberg::ScanPlanner planner(*table_io, t.metadata);
        if (threads > 0) planner.set_threads(threads);
        int64_t n = 0;
        SKADE_RETURN_IF_ERROR(planner.PlanFiles(snapshot, schema, filter, [&](iceberg::FileScanTask) {
          ++n;
          return Status::Ok();
        }));
        entries = planner.stats().data_files_total;
        stream.detail = std::to_string(n) + " tasks";
        return Status::Ok();
      });
      if (!st.ok()) return Fail(st);
      if (entries > 0) stream.detail += ", " + per_entry(stream, entries);
      Report(stream);
    }
    {
      // Through a manifest cache, primed by one plan: what a server plans again with once a
      // commit added only a manifest or two (iceberg/manifest_cache.h).
      iceberg::ManifestCache cache(int64_t{4} << 30);
      {
        iceberg::ScanPlanner primer(*table_io, t.metadata);
        primer.set_cache(&cache);
        st = primer.PlanFiles(snapshot, schema, filter, [](iceberg::FileScanTask) { return Status::Ok(); });
        if (!st.ok()) return Fail(st);
      }
      Phase warm{"PlanFiles through a warm ManifestCache, default threads, " + label, {}, 0, ""};
      int64_t entries = 0;
      st = Measure(&warm, repeat, [&]() -> Status {
        iceberg::ScanPlanner planner(*table_io, t.metadata);
        planner.set_cache(&cache);
        int64_t n = 0;
        SKADE_RETURN_IF_ERROR(planner.PlanFiles(snapshot, schema, filter, [&](iceberg::FileScanTask) {
          ++n;
          return Status::Ok();
        }));
        entries = planner.stats().data_files_total;
        warm.detail = std::to_string(n) + " tasks, cache " + std::to_string(cache.stats().bytes >> 20) + " MiB";
        return Status::Ok();
      });
      if (!st.ok()) return Fail(st);
      if (entries > 0) warm.detail += ", " + per_entry(warm, entries);
      Report(warm);
    }
    Phase plan{"PlanAll, " + label, {}, 0, ""};
    st = Measure(&plan, repeat, [&]() -> Status {
      iceberg::ScanPlanner planner(*table_io, t.metadata);
      SKADE_ASSIGN_OR_RETURN(auto tasks, planner.PlanAll(snapshot, schema, filter));
      const auto& s = planner.stats();
      plan.detail = std::to_string(tasks.size()) + " tasks; manifests " +
                    std::to_string(s.manifests_total) + " (" + std::to_string(s.manifests_skipped) +
                    " skipped), files " + std::to_string(s.data_files_total) + " (" +
                    std::to_string(s.data_files_skipped) + " skipped)";
      return Status::Ok();
    });
    if (!st.ok()) return Fail(st);
    Report(plan);
  }
  std::cout << "end: RSS " << ProcStatusKb("VmRSS") / 1024.0
            << " MiB, process peak (VmHWM since last reset) " << ProcStatusKb("VmHWM") / 1024.0
            << " MiB\n";
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
