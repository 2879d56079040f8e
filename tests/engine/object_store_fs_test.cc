// DuckDB over s3:// through skade's FileIO (the object-store FileSystem registered by
// DatabaseOptions::object_store), against s3rver on loopback: read_parquet and globs, COPY … TO
// an object (never replacing one, nothing left by a failed COPY), errors that name the missing
// bucket or key, concurrent ranged reads, the lock-down's allowed folders, the bytes a
// projection fetches, and an Iceberg table read with its metadata, manifests and data on S3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "skade/base/clock.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"
#include "skade/io/routing_file_io.h"
#include "skade/io/s3_file_io.h"
#include "tests/testing/foreign_table.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/s3rver.h"
#include "tests/testing/temp_dir.h"

namespace skade::engine {
namespace {

using namespace std::chrono_literals;
using Rows = std::vector<std::vector<std::string>>;

// Counts what DuckDB asks of the object store, passing every call on to `base`.
class CountingFileIO final : public io::FileIO {
 public:
  explicit CountingFileIO(io::FileIO& base) : base_(base) {}

  Result<std::string> Read(std::string_view l) override { return base_.Read(l); }
  Result<std::string> ReadRange(std::string_view l, int64_t offset, int64_t length) override {
    const int now = ++in_flight_;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    ++range_reads;
    range_bytes += length;
    auto out = base_.ReadRange(l, offset, length);
    --in_flight_;
    return out;
  }
  Result<io::FileInfo> Stat(std::string_view l) override {
    ++stats;
    return base_.Stat(l);
  }
  Status CreateExclusive(std::string_view l, std::string_view d) override {
    ++creates;
    return base_.CreateExclusive(l, d);
  }
  Status Overwrite(std::string_view l, std::string_view d) override {
    return base_.Overwrite(l, d);
  }
  Status Update(std::string_view l, const Change& c) override { return base_.Update(l, c); }
  Result<std::vector<io::FileInfo>> List(std::string_view p) override {
    ++lists;
    return base_.List(p);
  }
  Status Delete(std::string_view l) override {
    ++deletes;
    return base_.Delete(l);
  }

  void Reset() {
    range_reads = 0;
    range_bytes = 0;
    stats = 0;
    lists = 0;
    creates = 0;
    deletes = 0;
    max_in_flight = 0;
  }

  std::atomic<int64_t> range_reads{0};
  std::atomic<int64_t> range_bytes{0};
  std::atomic<int64_t> stats{0};
  std::atomic<int64_t> lists{0};
  std::atomic<int64_t> creates{0};
  std::atomic<int64_t> deletes{0};
  std::atomic<int> max_in_flight{0};

 private:
  io::FileIO& base_;
  std::atomic<int> in_flight_{0};
};

io::S3Options S3rverOptions(int port) {
  io::S3Options o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.access_key_id = testing::kS3rverAccessKey;
  o.secret_access_key = testing::kS3rverSecretKey;
  o.conditional_writes = io::S3ConditionalWrites::kEmulated;
  o.retry.initial_backoff = 5ms;
  o.retry.max_backoff = 20ms;
  return o;
}

class ObjectStoreFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::S3rver& server = testing::S3rver::Shared();
    ASSERT_GT(server.port(), 0) << server.error();
    auto s3 = io::S3FileIO::Open(S3rverOptions(server.port()));
    ASSERT_TRUE(s3.ok()) << s3.status().ToString();
    s3_ = std::move(s3).value();
    counting_ = std::make_unique<CountingFileIO>(*s3_);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = std::string("s3://") + testing::kS3rverBucket + "/" + info->name() + "-" +
              std::to_string(NowMicros());
    db_ = OpenDatabase({});
  }

  std::unique_ptr<Database> OpenDatabase(DatabaseOptions options) {
    options.object_store = counting_.get();
    auto db = Database::Open(options);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    return db.ok() ? std::move(db).value() : nullptr;
  }

  std::string Loc(std::string_view name) const { return prefix_ + "/" + std::string(name); }

  // Writes `select`'s rows to a local Parquet file with DuckDB and uploads it to `location`.
  // Returns the local path.
  std::string Upload(const std::string& select, const std::string& location,
                     const std::string& copy_options = "FORMAT parquet") {
    const std::string local = tmp_.Path("upload-" + std::to_string(++uploads_) + ".parquet");
    Status copied =
        db_->Execute("COPY (" + select + ") TO " + QuoteString(local) + " (" + copy_options + ")");
    EXPECT_TRUE(copied.ok()) << copied.ToString();
    Status put = s3_->CreateExclusive(location, testing::ReadFileOrDie(local));
    EXPECT_TRUE(put.ok()) << put.ToString();
    return local;
  }

  Rows Query(const std::string& sql) { return testing::QueryText(*db_, sql); }
  Status Run(Database& db, const std::string& sql) {
    auto rows = db.QueryRows(sql);
    return rows.ok() ? Status::Ok() : rows.status();
  }

  testing::TempDir tmp_;
  std::unique_ptr<io::S3FileIO> s3_;
  std::unique_ptr<CountingFileIO> counting_;
  std::string prefix_;
  std::unique_ptr<Database> db_;
  int uploads_ = 0;
};

constexpr const char* kSample =
    "SELECT range AS id, 'name-' || range AS name, range * 1.5 AS score FROM range(1000)";

TEST_F(ObjectStoreFileSystemTest, ReadParquetReturnsTheLocalFilesRows) {
  const std::string local = Upload(kSample, Loc("t/a.parquet"));
  const Rows expected = Query("SELECT * FROM read_parquet(" + QuoteString(local) + ") ORDER BY id");
  ASSERT_EQ(expected.size(), 1000u);
  EXPECT_EQ(
      Query("SELECT * FROM read_parquet(" + QuoteString(Loc("t/a.parquet")) + ") ORDER BY id"),
      expected);
  // The other spellings of the scheme and a bare FROM reach the same object.
  const std::string s3a = "s3a" + Loc("t/a.parquet").substr(2);
  EXPECT_EQ(Query("SELECT count(*), sum(id) FROM " + QuoteString(s3a)), (Rows{{"1000", "499500"}}));
  EXPECT_EQ(Query("SELECT count(*) FROM read_parquet([" + QuoteString(Loc("t/a.parquet")) + ", " +
                  QuoteString(s3a) + "])"),
            (Rows{{"2000"}}));
}

TEST_F(ObjectStoreFileSystemTest, GlobsListThePrefixAndMatch) {
  Upload("SELECT 1 AS v", Loc("g/a1.parquet"));
  Upload("SELECT 2 AS v", Loc("g/a2.parquet"));
  Upload("SELECT 3 AS v", Loc("g/b1.parquet"));
  Upload("SELECT 4 AS v", Loc("g/sub/a3.parquet"));
  Upload("SELECT 5 AS v", Loc("gx/a4.parquet"));
  auto sum = [&](const std::string& pattern) {
    return Query("SELECT sum(v) FROM read_parquet(" + QuoteString(Loc(pattern)) + ")");
  };
  EXPECT_EQ(sum("g/*.parquet"), (Rows{{"6"}}));
  EXPECT_EQ(sum("g/a?.parquet"), (Rows{{"3"}}));
  EXPECT_EQ(sum("g/[ab]1.parquet"), (Rows{{"4"}}));
  EXPECT_EQ(sum("g/**/*.parquet"), (Rows{{"10"}}));
  EXPECT_EQ(sum("g*/a*.parquet"), (Rows{{"8"}}));
  EXPECT_EQ(Query("SELECT file FROM glob(" + QuoteString(Loc("g/a*")) + ") ORDER BY file"),
            (Rows{{Loc("g/a1.parquet")}, {Loc("g/a2.parquet")}}));
  auto none = db_->QueryRows("SELECT * FROM read_parquet(" + QuoteString(Loc("g/*.csv")) + ")");
  EXPECT_FALSE(none.ok());
}

TEST_F(ObjectStoreFileSystemTest, CopyToAnObjectThenReadItBack) {
  const std::string out = Loc("out/data.parquet");
  counting_->Reset();
  Status copied = db_->Execute(std::string("COPY (") + kSample + ") TO " + QuoteString(out) +
                               " (FORMAT parquet)");
  ASSERT_TRUE(copied.ok()) << copied.ToString();
  EXPECT_EQ(counting_->creates.load(), 1);
  EXPECT_EQ(counting_->deletes.load(), 0);
  EXPECT_EQ(Query("SELECT count(*), sum(id), max(name) FROM " + QuoteString(out)),
            (Rows{{"1000", "499500", "name-999"}}));
  // CSV goes the same way.
  const std::string csv = Loc("out/data.csv");
  ASSERT_TRUE(
      db_->Execute("COPY (SELECT 1 AS a, 'x' AS b) TO " + QuoteString(csv) + " (FORMAT csv)").ok());
  EXPECT_EQ(s3_->Read(csv).ValueOr(""), "a,b\n1,x\n");
}

TEST_F(ObjectStoreFileSystemTest, CopyOntoAnExistingObjectIsRefused) {
  const std::string out = Loc("existing.parquet");
  ASSERT_TRUE(s3_->CreateExclusive(out, "old bytes").ok());
  Status copied = db_->Execute(std::string("COPY (") + kSample + ") TO " + QuoteString(out) +
                               " (FORMAT parquet)");
  EXPECT_FALSE(copied.ok());
  EXPECT_EQ(s3_->Read(out).ValueOr(""), "old bytes");
}

TEST_F(ObjectStoreFileSystemTest, FailedCopyLeavesNoObject) {
  const std::string out = Loc("failed.parquet");
  // The error is raised after DuckDB has opened the target and written row groups.
  Status copied = db_->Execute(
      "COPY (SELECT CASE WHEN range < 300000 THEN range ELSE error('boom') END AS v FROM "
      "range(400000)) TO " +
      QuoteString(out) + " (FORMAT parquet, ROW_GROUP_SIZE 10000)");
  EXPECT_FALSE(copied.ok());
  EXPECT_EQ(s3_->Stat(out).status().code(), StatusCode::kNotFound);
  const std::string csv = Loc("failed.csv");
  copied = db_->Execute(
      "COPY (SELECT CASE WHEN range < 300000 THEN range ELSE error('boom') END AS v FROM "
      "range(400000)) TO " +
      QuoteString(csv) + " (FORMAT csv)");
  EXPECT_FALSE(copied.ok());
  EXPECT_EQ(s3_->Stat(csv).status().code(), StatusCode::kNotFound);
}

// An object store that cannot be reached makes a write (and a read) fail as unavailable —
// the store's fault, to retry later — never as a bad request.
TEST_F(ObjectStoreFileSystemTest, AnUnreachableStoreIsUnavailableForWritesAndReads) {
  io::S3Options o = S3rverOptions(1);  // nothing listens on port 1
  o.retry.max_attempts = 2;
  auto down = io::S3FileIO::Open(o);
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  DatabaseOptions options;
  options.object_store = down->get();
  auto db = Database::Open(options);
  ASSERT_TRUE(db.ok());
  Status copied = (*db)->Execute("COPY (SELECT 1 AS v) TO " + QuoteString(Loc("down.parquet")) + " (FORMAT parquet)");
  EXPECT_EQ(copied.code(), StatusCode::kUnavailable) << copied.ToString();
  Status read = Run(**db, "SELECT * FROM read_parquet(" + QuoteString(Loc("down.parquet")) + ")");
  EXPECT_EQ(read.code(), StatusCode::kUnavailable) << read.ToString();
}

TEST_F(ObjectStoreFileSystemTest, PartitionedCopyWritesObjectsUnderThePrefix) {
  const std::string out = Loc("parts");
  Status copied = db_->Execute("COPY (SELECT range AS v, range % 3 AS k FROM range(30)) TO " +
                               QuoteString(out) + " (FORMAT parquet, PARTITION_BY (k))");
  ASSERT_TRUE(copied.ok()) << copied.ToString();
  auto listed = s3_->List(out);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 3u);
  EXPECT_EQ(
      Query("SELECT k, count(*), sum(v) FROM read_parquet(" + QuoteString(out + "/**/*.parquet") +
            ", hive_partitioning = true) GROUP BY k ORDER BY k"),
      (Rows{{"0", "10", "135"}, {"1", "10", "145"}, {"2", "10", "155"}}));
}

TEST_F(ObjectStoreFileSystemTest, MissingBucketOrKeyIsNamed) {
  auto key =
      db_->QueryRows("SELECT * FROM read_parquet(" + QuoteString(Loc("absent.parquet")) + ")");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(), ::testing::HasSubstr("absent.parquet"));
  auto bucket = db_->QueryRows("SELECT * FROM read_parquet('s3://no-such-bucket-skade/x.parquet')");
  ASSERT_FALSE(bucket.ok());
  EXPECT_THAT(bucket.status().message(), ::testing::HasSubstr("no-such-bucket-skade"));
  // S3's own words reach the user (a HEAD alone would only say 404).
  EXPECT_THAT(bucket.status().message(), ::testing::HasSubstr("NoSuchBucket"));
  EXPECT_THAT(key.status().message(), ::testing::HasSubstr("NoSuchKey"));
  auto glob = db_->QueryRows("SELECT * FROM read_parquet('s3://no-such-bucket-skade/*.parquet')");
  ASSERT_FALSE(glob.ok());
  EXPECT_THAT(glob.status().message(), ::testing::HasSubstr("no-such-bucket-skade"));
  // Without an object store, DuckDB has no file system for s3:// at all.
  auto plain = Database::Open({});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(
      (*plain)
          ->QueryRows("SELECT * FROM read_parquet(" + QuoteString(Loc("absent.parquet")) + ")")
          .ok());
}

TEST_F(ObjectStoreFileSystemTest, ConcurrentReadsFromDuckDBThreads) {
  const std::string loc = Loc("big.parquet");
  const std::string local = Upload(
      "SELECT range AS id, hash(range) AS h, repeat('x', (range % 50)::INTEGER) AS pad FROM "
      "range(300000)",
      loc, "FORMAT parquet, ROW_GROUP_SIZE 20000");
  DatabaseOptions options;
  options.threads = 2;
  auto db = OpenDatabase(options);
  ASSERT_NE(db, nullptr);
  const std::string query =
      "SELECT count(*), sum(id), sum(h % 1000), sum(length(pad)) FROM read_parquet(";
  const Rows expected = testing::QueryText(*db, query + QuoteString(local) + ")");
  counting_->Reset();
  EXPECT_EQ(testing::QueryText(*db, query + QuoteString(loc) + ")"), expected);
  EXPECT_GT(counting_->range_reads.load(), 1);
  std::printf("concurrent read: %lld range reads, %lld bytes, at most %d at once\n",
              static_cast<long long>(counting_->range_reads.load()),
              static_cast<long long>(counting_->range_bytes.load()),
              counting_->max_in_flight.load());
  // Row groups are read by both threads and every one of them is read right.
  EXPECT_EQ(testing::QueryText(*db, "SELECT count(*) FROM read_parquet(" + QuoteString(loc) +
                                        ") WHERE id % 20000 = 19999"),
            (Rows{{"15"}}));
}

TEST_F(ObjectStoreFileSystemTest, ProjectionFetchesAFractionOfTheFile) {
  std::string select = "SELECT range AS c0";
  for (int i = 1; i < 16; ++i)
    select += ", hash(range + " + std::to_string(i) + ") AS c" + std::to_string(i);
  select += " FROM range(200000)";
  const std::string loc = Loc("wide.parquet");
  Upload(select, loc, "FORMAT parquet, ROW_GROUP_SIZE 50000");
  auto info = s3_->Stat(loc);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  counting_->Reset();
  EXPECT_EQ(Query("SELECT sum(c0) FROM read_parquet(" + QuoteString(loc) + ")"),
            (Rows{{"19999900000"}}));
  const int64_t reads = counting_->range_reads.load();
  const int64_t bytes = counting_->range_bytes.load();
  std::printf(
      "projection of 1 of 16 columns: %lld range reads, %lld of %lld bytes (%.1f%%), %lld stats\n",
      static_cast<long long>(reads), static_cast<long long>(bytes),
      static_cast<long long>(info->size),
      100.0 * static_cast<double>(bytes) / static_cast<double>(info->size),
      static_cast<long long>(counting_->stats.load()));
  EXPECT_LT(bytes, info->size / 2);
  EXPECT_LE(reads, 16);
  // Row-group pruning: a filter on c0 reads the chunks of one row group only.
  counting_->Reset();
  EXPECT_EQ(Query("SELECT count(*) FROM read_parquet(" + QuoteString(loc) +
                  ") WHERE c0 BETWEEN 120000 AND 120009"),
            (Rows{{"10"}}));
  std::printf("filter on c0: %lld range reads, %lld bytes\n",
              static_cast<long long>(counting_->range_reads.load()),
              static_cast<long long>(counting_->range_bytes.load()));
  EXPECT_LT(counting_->range_bytes.load(), bytes);
}

TEST_F(ObjectStoreFileSystemTest, LockDownAllowsOnlyTheAllowedPrefix) {
  Upload("SELECT 1 AS v", Loc("allowed/a.parquet"));
  Upload("SELECT 2 AS v", Loc("secret/b.parquet"));
  Upload("SELECT 3 AS v", Loc("allowed-not/c.parquet"));
  const std::string other = std::string("s3://") + testing::kS3rverOtherBucket + "/" +
                            prefix_.substr(prefix_.rfind('/') + 1) + "/d.parquet";
  ASSERT_TRUE(
      s3_->CreateExclusive(other, testing::ReadFileOrDie(tmp_.Path("upload-1.parquet"))).ok());
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {Loc("allowed"), tmp_.path()};
  options.temp_directory = tmp_.Path("duck-tmp");
  auto db = OpenDatabase(options);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(testing::QueryText(
                *db, "SELECT v FROM read_parquet(" + QuoteString(Loc("allowed/a.parquet")) + ")"),
            (Rows{{"1"}}));
  EXPECT_EQ(testing::QueryText(*db, "SELECT sum(v) FROM read_parquet(" +
                                        QuoteString(Loc("allowed/*.parquet")) + ")"),
            (Rows{{"1"}}));
  for (const std::string& refused :
       {Loc("secret/b.parquet"), Loc("allowed-not/c.parquet"), Loc("allowed/../secret/b.parquet"),
        other, Loc("*/b.parquet"), "s3a" + Loc("allowed/a.parquet").substr(2)}) {
    auto rows = db->QueryRows("SELECT * FROM read_parquet(" + QuoteString(refused) + ")");
    EXPECT_EQ(rows.status().code(), StatusCode::kPermissionDenied)
        << refused << ": " << rows.status().ToString();
  }
  // Writes follow the same rule.
  Status allowed = Run(*db, "COPY (SELECT 1 AS v) TO " + QuoteString(Loc("allowed/new.parquet")));
  EXPECT_TRUE(allowed.ok()) << allowed.ToString();
  EXPECT_TRUE(s3_->Stat(Loc("allowed/new.parquet")).ok());
  EXPECT_EQ(Run(*db, "COPY (SELECT 1 AS v) TO " + QuoteString(Loc("secret/new.parquet"))).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(s3_->Stat(Loc("secret/new.parquet")).status().code(), StatusCode::kNotFound);
}

// An Iceberg table with its metadata, manifests, data and equality delete files on S3 reads the
// same rows as the fixture table on disk; the manifests are planned from S3 through the routing
// FileIO.
TEST_F(ObjectStoreFileSystemTest, IcebergTableOnS3ReadsLikeTheLocalTable) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string dir = testing::FixturePath("iceberg/equality_deletes_mytable");
  auto parsed =
      iceberg::ParseTableMetadata(testing::ReadFileOrDie(dir + "/metadata/v7.metadata.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const iceberg::TableMetadata original = std::move(parsed).value();
  io::LocationMap to_fixture;
  to_fixture.Add("data/persistent/equality_deletes/warehouse/mydb/mytable", dir);
  auto local_io = io::MakeLocalFileIO();
  auto fixture_io = io::MakeRelocatingFileIO(*local_io, to_fixture);

  auto table_sql = [&](Database& db, io::FileIO& io, const iceberg::TableMetadata& metadata,
                       const io::LocationMap& locations) -> std::string {
    auto selected = iceberg::SelectSnapshot(metadata, {});
    EXPECT_TRUE(selected.ok()) << selected.status().ToString();
    if (!selected.ok() || selected->snapshot == nullptr) return "SELECT 1 WHERE false";
    IcebergScan scan;
    scan.schema = selected->schema;
    scan.locations = locations;
    scan.name_mapping = metadata.DefaultNameMapping();
    iceberg::ScanPlanner planner(io, metadata);
    auto tasks = planner.PlanAll(*selected->snapshot, *selected->schema, nullptr);
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    if (tasks.ok()) scan.tasks = std::move(tasks).value();
    auto sql = BuildTableSql(db, scan);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? *sql : "SELECT 1 WHERE false";
  };
  const Rows expected = Query("WITH t AS (" + table_sql(*db_, *fixture_io, original, to_fixture) +
                              ") SELECT * FROM t ORDER BY ALL");
  ASSERT_EQ(expected, (Rows{{"4", "d", "2025-01-04"}, {"5", "e", "2025-01-05"}}));

  // The copy spells every location s3://…/t/…; its files go up under that prefix.
  const std::string root = Loc("wh/t");
  const std::string copy_dir = tmp_.Path("copy");
  auto uploaded = testing::UploadForeignCopy(original, *fixture_io, *db_, copy_dir, root, *s3_);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
  EXPECT_GT(*uploaded, 4);

  auto lake_io = io::MakeRoutingFileIO(
      io::MakeLocalFileIO(), io::MakeS3FileIO(S3rverOptions(testing::S3rver::Shared().port())));
  auto metadata_json = lake_io->Read(root + "/metadata/v1.metadata.json");
  ASSERT_TRUE(metadata_json.ok()) << metadata_json.status().ToString();
  auto on_s3 = iceberg::ParseTableMetadata(*metadata_json);
  ASSERT_TRUE(on_s3.ok()) << on_s3.status().ToString();
  EXPECT_EQ(on_s3->location, root);
  counting_->Reset();
  const std::string sql = table_sql(*db_, *lake_io, *on_s3, io::LocationMap());
  EXPECT_THAT(sql, ::testing::HasSubstr(root + "/data/"));
  EXPECT_EQ(Query("WITH t AS (" + sql + ") SELECT * FROM t ORDER BY ALL"), expected);
  EXPECT_GT(counting_->range_reads.load(), 0);
}

}  // namespace
}  // namespace skade::engine
