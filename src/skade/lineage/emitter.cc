#include "skade/lineage/emitter.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <string_view>
#include <utility>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/events/replay.h"

namespace skade::lineage {
namespace {

class CatalogCursorStore final : public CursorStore {
 public:
  CatalogCursorStore(catalog::Catalog& catalog, std::string consumer) : catalog_(catalog), consumer_(std::move(consumer)) {}
  Result<std::optional<int64_t>> Load() override { return catalog_.LoadConsumerCursor(consumer_); }
  Status Store(int64_t commit_seq) override { return catalog_.StoreConsumerCursor(consumer_, commit_seq); }
  std::string Describe() const override { return "the catalog (consumer '" + consumer_ + "')"; }

 private:
  catalog::Catalog& catalog_;
  std::string consumer_;
};

class FileCursorStore final : public CursorStore {
 public:
  explicit FileCursorStore(std::string path) : path_(std::move(path)), io_(io::MakeLocalFileIO()) {}
  Result<std::optional<int64_t>> Load() override {
    auto text = io_->Read(path_);
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound) return std::optional<int64_t>();
      return text.status();
    }
    try {
      size_t used = 0;
      const int64_t seq = std::stoll(*text, &used);
      if (seq < 0) throw std::invalid_argument("negative");
      return std::optional<int64_t>(seq);
    } catch (const std::exception&) {
      return Status::Corruption("lineage cursor file '" + path_ + "' does not hold a commit_seq");
    }
  }
  Status Store(int64_t commit_seq) override { return io_->Overwrite(path_, std::to_string(commit_seq) + "\n"); }
  std::string Describe() const override { return "file " + path_; }

 private:
  std::string path_;
  std::unique_ptr<io::FileIO> io_;
};

catalog::CommitLogEntry EntryOf(const events::CommitEvent& e) {
  catalog::CommitLogEntry entry;
  entry.commit_seq = e.commit_seq;
  entry.table = e.table();
  entry.snapshot_id = e.snapshot_id;
  entry.metadata_location = e.metadata_location();
  entry.operation = e.operation();
  entry.added_records = e.added_records;
  entry.deleted_records = e.deleted_records;
  entry.committed_at_us = e.committed_at_us;
  entry.txn_id = e.txn_id();
  return entry;
}

// The length of the UTF-8 sequence starting at text[i], or 0 when none is (a stray or
// overlong byte, a cut-off sequence, a surrogate).
size_t Utf8Length(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3;
  else if (c >= 0xF0 && c <= 0xF4) n = 4;
  else return 0;
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // a surrogate
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // past U+10FFFF
  return n;
}

// `text` as a Prometheus label value: the exposition format escapes backslash, double quote and
// line feed; other control characters become spaces and bytes that are not UTF-8 '?' (a scraper
// refuses a page that is not UTF-8), cut to about `max_bytes`.
std::string LabelValue(std::string_view text, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < text.size() && out.size() < max_bytes;) {
    const char c = text[i];
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      out += '?';
      ++i;
    } else if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      if (c == '\\') out += "\\\\";
      else if (c == '"') out += "\\\"";
      else if (c == '\n') out += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) out += ' ';
      else out += c;
      ++i;
    }
  }
  return out;
}

// One metric: its HELP and TYPE lines and one sample.
void AddMetric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
               const std::string& value) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  out.append(name).append(" ").append(value).append("\n");
}

// Unix microseconds as Prometheus seconds (milliseconds kept).
std::string Seconds(int64_t us) {
  const int64_t ms = us / 1000;
  std::string frac = std::to_string(ms % 1000);
  return std::to_string(ms / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

}  // namespace

std::string EmitterMetricsText(const Emitter* emitter) {
  std::string out;
  AddMetric(out, "skade_lineage_emitter_configured", "gauge",
            "Whether this server runs an OpenLineage emitter (1) or none is configured (0).",
            emitter != nullptr ? "1" : "0");
  if (emitter == nullptr) return out;
  const EmitterStats s = emitter->stats();
  AddMetric(out, "skade_lineage_events_sent_total", "counter", "OpenLineage events delivered.",
            std::to_string(s.events_sent));
  AddMetric(out, "skade_lineage_send_failures_total", "counter",
            "OpenLineage delivery attempts that failed (each is retried).", std::to_string(s.send_failures));
  AddMetric(out, "skade_lineage_events_refused_total", "counter",
            "OpenLineage events the receiver refused as invalid (skipped).", std::to_string(s.events_refused));
  AddMetric(out, "skade_lineage_failed_writes_sent_total", "counter",
            "Failed writes whose START and FAIL events were delivered.", std::to_string(s.failed_writes_sent));
  AddMetric(out, "skade_lineage_pending_commits", "gauge",
            "Commits in the log whose OpenLineage events are not delivered yet.", std::to_string(s.pending_commits()));
  AddMetric(out, "skade_lineage_delivered_commit_seq", "gauge",
            "commit_seq of the last commit whose OpenLineage events were delivered.", std::to_string(s.delivered_seq));
  AddMetric(out, "skade_lineage_stored_commit_seq", "gauge", "The OpenLineage emitter's cursor as last stored.",
            std::to_string(s.stored_seq));
  AddMetric(out, "skade_lineage_failing_attempts", "gauge",
            "Failed attempts in a row at the OpenLineage event in flight (0 once one is delivered).",
            std::to_string(s.failing_attempts));
  if (s.last_sent_at_us > 0) {
    AddMetric(out, "skade_lineage_last_sent_timestamp_seconds", "gauge",
              "When an OpenLineage event was last delivered (Unix time).", Seconds(s.last_sent_at_us));
  }
  if (s.last_error_at_us > 0) {
    AddMetric(out, "skade_lineage_last_error_timestamp_seconds", "gauge",
              "When an OpenLineage delivery last failed or was refused (Unix time).", Seconds(s.last_error_at_us));
    out += "# HELP skade_lineage_last_error_info The last failed or refused OpenLineage delivery, as its message.\n";
    out += "# TYPE skade_lineage_last_error_info gauge\n";
    out += "skade_lineage_last_error_info{message=\"" + LabelValue(s.last_error, 512) + "\"} 1\n";
  }
  return out;
}

Result<std::unique_ptr<CursorStore>> OpenCursorStore(catalog::Catalog& catalog, const std::string& consumer,
                                                     const std::string& fallback_path) {
  auto probe = catalog.LoadConsumerCursor(consumer);
  if (probe.ok()) return std::unique_ptr<CursorStore>(std::make_unique<CatalogCursorStore>(catalog, consumer));
  if (probe.status().code() != StatusCode::kNotImplemented) return probe.status().WithContext("lineage cursor");
  if (fallback_path.empty()) {
    return Status::InvalidArgument("the catalog keeps no consumer cursors and no lineage state file was given");
  }
  return std::unique_ptr<CursorStore>(std::make_unique<FileCursorStore>(fallback_path));
}

Result<std::unique_ptr<Emitter>> Emitter::Start(catalog::Catalog& catalog, io::FileIO& io, events::Bus& bus,
                                                std::unique_ptr<Transport> transport,
                                                std::unique_ptr<CursorStore> cursor, EmitterOptions options) {
  if (transport == nullptr || cursor == nullptr) return Status::InvalidArgument("lineage emitter without a transport or cursor");
  SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> stored, cursor->Load());
  int64_t start = 0;
  if (stored) {
    start = *stored;
  } else if (!options.start_at_beginning) {
    SKADE_ASSIGN_OR_RETURN(start, catalog.LatestCommitSeq());
  }
  if (!stored) {
    // The cursor exists from the moment the emitter follows the catalog: stopped before its
    // first delivery (receiver down, kill -9, a clean stop), it resumes here on restart instead
    // of at the log's head then, which would skip every commit in between.
    // A cursor that cannot be stored (a read-only catalog) is what it was before: the emitter
    // still sends, and says that a restart will start at the head again.
    if (Status stored_now = cursor->Store(start); !stored_now.ok()) {
      SKADE_LOG_WARN("openlineage: cannot store the first cursor ({}) in {}: {}; a restart starts at the log's head",
                     start, cursor->Describe(), stored_now.ToString());
    }
  }
  SKADE_LOG_INFO("openlineage: sending to {} after commit {} (cursor in {})", transport->Describe(), start,
                 cursor->Describe());
  std::unique_ptr<table::FailedWriteSpool> spool;
  if (!options.failure_spool.empty()) {
    spool = std::make_unique<table::FailedWriteSpool>(options.failure_spool);
    SKADE_RETURN_IF_ERROR(spool->Enable().WithContext("lineage failure spool"));
  }
  auto e = std::unique_ptr<Emitter>(
      new Emitter(catalog, io, bus, std::move(transport), std::move(cursor), std::move(options), start));
  e->spool_ = std::move(spool);
  e->thread_ = std::thread([p = e.get()] { p->Run(); });
  return e;
}

Emitter::Emitter(catalog::Catalog& catalog, io::FileIO& io, events::Bus& bus, std::unique_ptr<Transport> transport,
                 std::unique_ptr<CursorStore> cursor, EmitterOptions options, int64_t start_seq)
    : catalog_(catalog),
      io_(io),
      bus_(bus),
      transport_(std::move(transport)),
      cursor_(std::move(cursor)),
      options_(std::move(options)),
      start_seq_(start_seq),
      rng_(std::random_device{}()) {
  stats_.delivered_seq = start_seq;
  stats_.stored_seq = start_seq;
}

Emitter::~Emitter() { Stop(); }

void Emitter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

EmitterStats Emitter::stats() const {
  const int64_t head = bus_.last_seq();
  std::lock_guard<std::mutex> lock(mu_);
  EmitterStats out = stats_;
  out.head_seq = head;
  return out;
}

bool Emitter::WaitDelivered(int64_t commit_seq, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return stats_.delivered_seq >= commit_seq; });
}

bool Emitter::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return stopping_; });
}

bool Emitter::Deliver(const std::string& event, const std::string& what) {
  std::chrono::milliseconds backoff = options_.initial_backoff;
  for (int attempt = 0;; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    Status sent = transport_->Send(event);
    if (sent.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.events_sent;
      stats_.failing_attempts = 0;
      stats_.last_sent_at_us = NowMicros();
      return true;
    }
    if (sent.code() == StatusCode::kInvalidArgument) {
      // Resending the same event cannot succeed; holding every later commit back for it would.
      SKADE_LOG_ERROR("openlineage: {} refused the event of {}; skipped: {}", transport_->Describe(), what,
                      sent.message());
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.events_refused;
      stats_.failing_attempts = 0;
      stats_.last_error = sent.message();
      stats_.last_error_at_us = NowMicros();
      return true;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.send_failures;
      ++stats_.failing_attempts;
      stats_.last_error = sent.message();
      stats_.last_error_at_us = NowMicros();
    }
    if (attempt == 0 || (attempt & (attempt - 1)) == 0) {  // 1st, 2nd, 4th, 8th… failure: not every one
      SKADE_LOG_WARN("openlineage: cannot deliver {} to {} (attempt {}), retrying: {}", what, transport_->Describe(),
                     attempt + 1, sent.message());
    }
    const int64_t b = backoff.count();
    std::uniform_int_distribution<int64_t> jitter(b / 2, std::max<int64_t>(b, 1));
    if (!Sleep(std::chrono::milliseconds(jitter(rng_)))) return false;
    backoff = std::min(options_.max_backoff, backoff * 2);
  }
}

bool Emitter::DrainSpool(table::FailedWriteSpool& spool) {
  auto pending = spool.TakePending();
  if (!pending.ok()) {
    SKADE_LOG_WARN("openlineage: cannot read the failure spool: {}", pending.status().ToString());
    return true;
  }
  if (pending->empty()) return true;
  for (const table::FailedWrite& write : *pending) {
    const std::string what = "the failed " + write.operation + " of " + write.table.ToString();
    for (const std::string& event : FailedWriteRunEvents(write, options_.naming)) {
      if (!Deliver(event, what)) return false;  // still in the sending file: resent on restart
    }
  }
  Status st = spool.MarkSent();
  if (!st.ok()) SKADE_LOG_WARN("openlineage: failed writes sent, but the spool keeps them: {}", st.ToString());
  std::lock_guard<std::mutex> lock(mu_);
  stats_.failed_writes_sent += static_cast<int64_t>(pending->size());
  return true;
}

void Emitter::StoreCursor() {
  int64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = stats_.delivered_seq;
    if (seq == stats_.stored_seq) return;
  }
  Status st = cursor_->Store(seq);
  if (!st.ok()) {
    SKADE_LOG_WARN("openlineage: cannot store the cursor ({}) in {}: {}", seq, cursor_->Describe(), st.ToString());
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.stored_seq = seq;
}

std::vector<catalog::CommitLogEntry> Emitter::TransactionOf(catalog::CommitLogEntry first,
                                                             events::ReplayThenTail& stream) {
  std::vector<catalog::CommitLogEntry> group;
  group.push_back(std::move(first));
  if (group.front().txn_id.empty()) return group;
  // The entries of one catalog transaction are consecutive in the log and become visible
  // together (one database transaction, DESIGN §4). The next entry is taken from the stream
  // when it arrives within a millisecond (kept in ahead_ when it belongs to the next
  // transaction: the publisher hands a transaction's entries on back to back); when it does
  // not, the log itself says whether the transaction has one more, so an entry the bus has not
  // handed on yet is waited for rather than missed. Only an emitter that is idle reads the log.
  while (true) {
    if (!ahead_) {
      auto next = stream.Next(std::chrono::milliseconds(1));
      if (next.ok() && *next) ahead_ = EntryOf(**next);
    }
    if (!ahead_) {
      auto after = catalog_.CommitsSince(group.back().commit_seq, 1);
      if (!after.ok() || after->empty() || (*after)[0].txn_id != group.front().txn_id) break;
      auto next = stream.Next(std::chrono::seconds(5));
      if (!next.ok() || !*next) {
        SKADE_LOG_WARN("openlineage: commit {} of transaction {} did not arrive in time; sent as its own run",
                       (*after)[0].commit_seq, group.front().txn_id);
        break;
      }
      ahead_ = EntryOf(**next);
    }
    if (ahead_->txn_id != group.front().txn_id) break;
    group.push_back(std::move(*ahead_));
    ahead_.reset();
  }
  return group;
}

void Emitter::Run() {
  // Lineage is asynchronous: when CPU is short, committers go first and the emitter catches up
  // once they are idle (a raised nice value of this thread only; failure to raise it is harmless).
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10) != 0) {
    SKADE_LOG_DEBUG("openlineage: emitter thread keeps its priority: {}", std::strerror(errno));
  }
  events::ReplayThenTail::Options replay;
  replay.replay_batch = 256;
  events::ReplayThenTail stream(catalog_, bus_, start_seq_, replay);
  const CommitEventBuilder builder(io_, options_.naming);
  int64_t since_store = 0;
  auto last_store = std::chrono::steady_clock::now();
  std::chrono::milliseconds error_backoff = options_.initial_backoff;
  auto last_spool = std::chrono::steady_clock::time_point{};
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    if (spool_ != nullptr && std::chrono::steady_clock::now() - last_spool >= options_.spool_every) {
      if (!DrainSpool(*spool_)) break;
      last_spool = std::chrono::steady_clock::now();
    }
    std::optional<catalog::CommitLogEntry> entry;
    if (ahead_) {
      // Taken from the stream while the previous transaction was gathered.
      entry = std::move(ahead_);
      ahead_.reset();
    } else {
      auto next = stream.Next(std::chrono::milliseconds(200));
      if (!next.ok()) {
        if (stream.closed()) break;
        SKADE_LOG_WARN("openlineage: cannot read the commit log: {}", next.status().ToString());
        if (!Sleep(error_backoff)) break;
        error_backoff = std::min(options_.max_backoff, error_backoff * 2);
        continue;
      }
      error_backoff = options_.initial_backoff;
      if (*next) entry = EntryOf(**next);
    }
    if (entry) {
      const std::vector<catalog::CommitLogEntry> group = TransactionOf(std::move(*entry), stream);
      const int64_t last_seq = group.back().commit_seq;
      const std::string what = group.size() == 1 ? "commit " + std::to_string(last_seq)
                                                 : "commits " + std::to_string(group.front().commit_seq) + "-" +
                                                       std::to_string(last_seq);
      bool stopped = false;
      for (const std::string& event : builder.BuildTransaction(group)) {
        if (!Deliver(event, what)) {
          stopped = true;
          break;
        }
      }
      if (stopped) break;
      {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.delivered_seq = last_seq;
      }
      cv_.notify_all();
      since_store += static_cast<int64_t>(group.size());
    }
    const auto now = std::chrono::steady_clock::now();
    if (since_store > 0 && (since_store >= options_.store_every_commits || now - last_store >= options_.store_every)) {
      StoreCursor();
      since_store = 0;
      last_store = now;
    }
  }
  StoreCursor();
}

}  // namespace skade::lineage
