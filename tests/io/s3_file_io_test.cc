// S3FileIO against s3rver 3.7.1 (npm, pinned in tests/interop/package-lock.json) started on
// 127.0.0.1 with a free port for this test binary, against s3cmd reading what skade wrote, and
// against small loopback servers for throttling, server errors, truncated bodies and the
// multipart protocol; plus the XML reader, location parsing and options from the environment.
//
// What s3rver 3.7.1 honours (read from its source and checked here): it ignores If-None-Match
// and If-Match on PUT (the tests use S3ConditionalWrites::kEmulated, and one test shows the
// server replacing an object despite If-None-Match: *); it checks only that a V4 request's
// access key exists (no signature check: a wrong secret is accepted, an unknown key is 403
// InvalidAccessKeyId); it implements multipart uploads without checking part ETags, and
// DeleteObjects without checking Content-MD5; it answers a range of an empty object with an
// invalid 206 instead of 416; its ListObjectsV2 continuation tokens need DES (node is started
// with --openssl-legacy-provider).
#include "skade/io/s3_file_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "skade/base/clock.h"
#include "skade/io/sigv4.h"
#include "skade/io/xml_internal.h"
#include "tests/io/test_servers.h"
#include "tests/testing/run_process.h"
#include "tests/testing/s3rver.h"
#include "tests/testing/temp_dir.h"

namespace skade::io {
namespace {

using namespace std::chrono_literals;
using testing::HttplibServer;
using testing::RawServer;

constexpr const char* kBucket = testing::kS3rverBucket;

S3Options S3rverOptions(int port) {
  S3Options o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.region = "us-east-1";
  o.access_key_id = testing::kS3rverAccessKey;
  o.secret_access_key = testing::kS3rverSecretKey;
  o.conditional_writes = S3ConditionalWrites::kEmulated;
  o.retry.initial_backoff = 5ms;
  o.retry.max_backoff = 20ms;
  return o;
}

class S3FileIOTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::S3rver& server = testing::S3rver::Shared();
    ASSERT_GT(server.port(), 0) << server.error();
    port_ = server.port();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ =
        std::string("s3://") + kBucket + "/" + info->name() + "-" + std::to_string(NowMicros());
    io_ = Open(S3rverOptions(port_));
  }

  static std::unique_ptr<S3FileIO> Open(S3Options options) {
    Result<std::unique_ptr<S3FileIO>> io = S3FileIO::Open(std::move(options));
    EXPECT_TRUE(io.ok()) << io.status().ToString();
    return io.ok() ? std::move(io).value() : nullptr;
  }

  std::string Loc(std::string_view name) const { return prefix_ + "/" + std::string(name); }

  int port_ = 0;
  std::string prefix_;
  std::unique_ptr<S3FileIO> io_;
};

TEST_F(S3FileIOTest, WritesReadsStatsAndDeletes) {
  const std::string loc = Loc("a/metadata.json");
  const int64_t before = NowMillis();
  ASSERT_TRUE(io_->CreateExclusive(loc, "first").ok());
  Result<std::string> read = io_->Read(loc);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "first");
  Result<FileInfo> info = io_->Stat(loc);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->location, loc);
  EXPECT_EQ(info->size, 5);
  // Last-Modified has one-second resolution.
  EXPECT_GE(info->modified_ms, before - 1000);
  EXPECT_LE(info->modified_ms, NowMillis() + 1000);

  EXPECT_EQ(io_->CreateExclusive(loc, "second").code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(io_->Overwrite(loc, "replaced").ok());
  EXPECT_EQ(io_->Read(loc).ValueOr(""), "replaced");

  ASSERT_TRUE(io_->Delete(loc).ok());
  EXPECT_EQ(io_->Read(loc).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(io_->Stat(loc).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(io_->Delete(loc).ok()) << "deleting an absent object is Ok";
  // s3a:// and s3n:// name the same objects.
  ASSERT_TRUE(io_->Overwrite(Loc("b"), "x").ok());
  EXPECT_EQ(io_->Read("s3a" + Loc("b").substr(2)).ValueOr(""), "x");
  EXPECT_EQ(io_->Read("s3n" + Loc("b").substr(2)).ValueOr(""), "x");
  EXPECT_EQ(io_->Read("gs://b/k").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(io_->Read("s3://" + std::string(kBucket)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(S3FileIOTest, ReadsRangesAtAndPastTheEnd) {
  std::string data;
  for (int i = 0; i < 100; ++i) data.push_back(static_cast<char>('a' + i % 26));
  const std::string loc = Loc("r.bin");
  ASSERT_TRUE(io_->Overwrite(loc, data).ok());
  EXPECT_EQ(io_->ReadRange(loc, 0, 10).ValueOr("?"), data.substr(0, 10));
  EXPECT_EQ(io_->ReadRange(loc, 37, 13).ValueOr("?"), data.substr(37, 13));
  EXPECT_EQ(io_->ReadRange(loc, 95, 10).ValueOr("?"), data.substr(95)) << "fewer bytes at the end";
  EXPECT_EQ(io_->ReadRange(loc, 99, 1).ValueOr("?"), data.substr(99));
  EXPECT_EQ(io_->ReadRange(loc, 100, 10).ValueOr("?"), "");
  EXPECT_EQ(io_->ReadRange(loc, 5000, 10).ValueOr("?"), "");
  EXPECT_EQ(io_->ReadRange(loc, 10, 0).ValueOr("?"), "");
  EXPECT_EQ(io_->ReadRange(loc, -1, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(io_->ReadRange(Loc("absent"), 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(io_->ReadRange(Loc("absent"), 0, 0).status().code(), StatusCode::kNotFound);

  const std::string empty = Loc("empty.bin");
  ASSERT_TRUE(io_->Overwrite(empty, "").ok());
  EXPECT_EQ(io_->Read(empty).ValueOr("?"), "");
  Result<std::string> r = io_->ReadRange(empty, 0, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "");
  EXPECT_EQ(io_->Stat(empty).ValueOr(FileInfo{}).size, 0);
}

TEST_F(S3FileIOTest, ListsWithPagination) {
  S3Options options = S3rverOptions(port_);
  options.list_page_size = 7;
  auto io = Open(options);
  std::set<std::string> expected;
  for (int i = 0; i < 30; ++i) {
    std::string loc = Loc("t/data/" + std::to_string(1000 + i) + ".parquet");
    ASSERT_TRUE(io->Overwrite(loc, std::string(static_cast<size_t>(i), 'x')).ok());
    expected.insert(loc);
  }
  // Neither a sibling sharing the name's prefix nor a folder marker is listed.
  ASSERT_TRUE(io->Overwrite(Loc("t2/other"), "x").ok());
  ASSERT_TRUE(io->Overwrite(Loc("t/data/dir/"), "").ok());
  Result<std::vector<FileInfo>> listed = io->List(Loc("t"));
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::set<std::string> got;
  for (const FileInfo& f : *listed) {
    got.insert(f.location);
    const std::string name = f.location.substr(f.location.rfind('/') + 1);
    EXPECT_EQ(f.size, std::stoi(name.substr(0, 4)) - 1000) << f.location;
    EXPECT_GT(f.modified_ms, 0);
  }
  EXPECT_EQ(listed->size(), 30u);
  EXPECT_EQ(got, expected);
  // A trailing slash means the same folder; s3a keeps its scheme in the result.
  EXPECT_EQ(io->List(Loc("t/")).ValueOr({}).size(), 30u);
  Result<std::vector<FileInfo>> s3a = io->List("s3a" + Loc("t").substr(2));
  ASSERT_TRUE(s3a.ok());
  ASSERT_FALSE(s3a->empty());
  EXPECT_EQ(s3a->front().location.rfind("s3a://", 0), 0u);
  EXPECT_TRUE(io->List(Loc("nothing-here")).ValueOr({FileInfo{}}).empty());
}

TEST_F(S3FileIOTest, OddKeysRoundTrip) {
  const std::vector<std::string> names = {
      "with space.txt",   "plus+sign",           "eq=amp&semi;",     "quote'dq\"",
      "percent%20lit",    "ünïcödé/日本語.json", "tilde~star*bang!", "paren(s)[b]{c}",
      "comma,at@dollar$", "lt<gt>hash#",         "question?mark"};
  for (const std::string& name : names) {
    const std::string loc = Loc("odd/" + name);
    SCOPED_TRACE(name);
    ASSERT_TRUE(io_->CreateExclusive(loc, "content of " + name).ok());
    EXPECT_EQ(io_->Read(loc).ValueOr("?"), "content of " + name);
    EXPECT_EQ(io_->Stat(loc).ValueOr(FileInfo{}).size, static_cast<int64_t>(name.size() + 11));
  }
  Result<std::vector<FileInfo>> listed = io_->List(Loc("odd"));
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::set<std::string> got;
  for (const FileInfo& f : *listed) got.insert(f.location);
  for (const std::string& name : names) EXPECT_EQ(got.count(Loc("odd/" + name)), 1u) << name;
  for (const std::string& name : names) EXPECT_TRUE(io_->Delete(Loc("odd/" + name)).ok());
  EXPECT_TRUE(io_->List(Loc("odd")).ValueOr({FileInfo{}}).empty());
}

TEST_F(S3FileIOTest, CreateExclusiveRaceHasOneWinnerWithinOneFileIO) {
  for (int round = 0; round < 5; ++round) {
    const std::string loc = Loc("race-" + std::to_string(round));
    std::atomic<int> won{0}, exists{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        Status st = io_->CreateExclusive(loc, "writer " + std::to_string(t));
        if (st.ok()) ++won;
        if (st.code() == StatusCode::kAlreadyExists) ++exists;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(won.load(), 1);
    EXPECT_EQ(exists.load(), 1);
  }
}

TEST_F(S3FileIOTest, CreateExclusiveAcrossFileIOsOnAServerIgnoringConditions) {
  // Two S3FileIO objects stand for two processes. s3rver ignores If-None-Match, so the header
  // comment promises only: at least one wins, and the object holds one writer's whole content.
  auto other = Open(S3rverOptions(port_));
  const std::string loc = Loc("cross");
  const std::string a(100'000, 'a'), b(100'000, 'b');
  Status sa, sb;
  std::thread ta([&] { sa = io_->CreateExclusive(loc, a); });
  std::thread tb([&] { sb = other->CreateExclusive(loc, b); });
  ta.join();
  tb.join();
  EXPECT_TRUE(sa.ok() || sb.ok());
  for (const Status& s : {sa, sb}) {
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kAlreadyExists) << s.ToString();
  }
  // tests/interop/s3rver.mjs makes the server write each PUT to a file of its own and rename it
  // over the object (s3rver itself wrote overlapping PUTs into one file).
  const std::string won = io_->Read(loc).ValueOr("");
  EXPECT_TRUE(won == a || won == b) << "a mix of " << std::count(won.begin(), won.end(), 'a') << " a's and "
                                    << std::count(won.begin(), won.end(), 'b') << " b's";
  // One writer after the other is refused by the emulated check and changes nothing.
  const std::string later = Loc("cross-later");
  ASSERT_TRUE(io_->CreateExclusive(later, a).ok());
  EXPECT_EQ(other->CreateExclusive(later, b).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(io_->Read(later).ValueOr(""), a);

  // And the server itself replaces an object despite If-None-Match: * (kServer mode trusts it).
  S3Options trusting = S3rverOptions(port_);
  trusting.conditional_writes = S3ConditionalWrites::kServer;
  auto trusted = Open(trusting);
  ASSERT_TRUE(trusted->CreateExclusive(Loc("ignored"), "one").ok());
  EXPECT_TRUE(trusted->CreateExclusive(Loc("ignored"), "two").ok());
  EXPECT_EQ(trusted->Read(Loc("ignored")).ValueOr(""), "two");
}

TEST_F(S3FileIOTest, UpdatesRunOneAfterAnother) {
  const std::string loc = Loc("version-hint.text");
  // Absent: the change sees nullopt and creates it; nullopt from the change leaves it.
  ASSERT_TRUE(io_->Update(loc,
                          [](const std::optional<std::string>& cur) -> std::optional<std::string> {
                            EXPECT_FALSE(cur.has_value());
                            return "0";
                          })
                  .ok());
  ASSERT_TRUE(
      io_->Update(loc, [](const std::optional<std::string>&) { return std::nullopt; }).ok());
  EXPECT_EQ(io_->Read(loc).ValueOr(""), "0");
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::atomic<int> unsettled{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 8; ++i) {
        Status st = io_->Update(loc, [&](const std::optional<std::string>& cur) -> std::optional<std::string> {
          int n = 0;
          const std::string text = cur.value_or("");
          auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
          if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
            ++unsettled;  // a read that found the object missing or half written
            return std::nullopt;
          }
          return std::to_string(n + 1);
        });
        if (!st.ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(unsettled.load(), 0);
  EXPECT_EQ(io_->Read(loc).ValueOr(""), "32");
}

TEST_F(S3FileIOTest, DeletesManyObjects) {
  std::vector<std::string> locations;
  for (int i = 0; i < 25; ++i) {
    locations.push_back(Loc("batch/f" + std::to_string(i) + (i % 5 == 0 ? " &'<x>" : "")));
    ASSERT_TRUE(io_->Overwrite(locations.back(), "x").ok());
  }
  ASSERT_TRUE(io_->Overwrite(Loc("batch-keep"), "x").ok());
  locations.push_back(Loc("batch/absent"));
  locations.push_back("s3://other-bucket/also-absent");
  Status st = io_->DeleteMany(locations);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(io_->List(Loc("batch")).ValueOr({FileInfo{}}).empty());
  EXPECT_TRUE(io_->Stat(Loc("batch-keep")).ok());
  EXPECT_TRUE(io_->DeleteMany({}).ok());
}

TEST_F(S3FileIOTest, MissingBucketIsNotFoundNamingTheBucket) {
  const std::string loc = "s3://no-such-bucket-here/k";
  for (const Status& st :
       {io_->Read(loc).status(), io_->List("s3://no-such-bucket-here/").status(),
        io_->CreateExclusive(loc, "x"), io_->Delete(loc), io_->ReadRange(loc, 0, 4).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
    EXPECT_NE(st.message().find("no-such-bucket-here"), std::string::npos) << st.message();
  }
  EXPECT_EQ(io_->Stat(loc).status().code(), StatusCode::kNotFound);
}

TEST_F(S3FileIOTest, WrongCredentials) {
  S3Options options = S3rverOptions(port_);
  options.access_key_id = "NOT-A-KEY";
  options.secret_access_key = "very-secret-value";
  auto io = Open(options);
  Result<std::string> r = io->Read(Loc("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("InvalidAccessKeyId"), std::string::npos);
  EXPECT_EQ(r.status().message().find("very-secret-value"), std::string::npos);
  EXPECT_EQ(io->Overwrite(Loc("x"), "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(io->Stat(Loc("x")).status().code(), StatusCode::kPermissionDenied);

  // s3rver does not verify V4 signatures: the right key with a wrong secret is accepted.
  options.access_key_id = "S3RVER";
  auto accepted = Open(options);
  EXPECT_TRUE(accepted->Overwrite(Loc("wrong-secret"), "accepted").ok());
}

TEST_F(S3FileIOTest, MultipartUploadAboveTheThreshold) {
  S3Options options = S3rverOptions(port_);
  options.multipart_threshold = 64 << 10;
  options.multipart_part_size = 48 << 10;
  auto io = Open(options);
  std::mt19937 rng(7);
  std::string data(300'000 + 123, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  const std::string loc = Loc("big/data.parquet");
  ASSERT_TRUE(io->CreateExclusive(loc, data).ok());
  EXPECT_EQ(io->Read(loc).ValueOr(""), data);
  EXPECT_EQ(io->Stat(loc).ValueOr(FileInfo{}).size, static_cast<int64_t>(data.size()));
  EXPECT_EQ(io->ReadRange(loc, 100'000, 50'000).ValueOr(""), data.substr(100'000, 50'000));
  EXPECT_EQ(io->CreateExclusive(loc, data).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(io->Overwrite(loc, data.substr(1000)).ok());
  EXPECT_EQ(io->Read(loc).ValueOr(""), data.substr(1000));
}

TEST_F(S3FileIOTest, VirtualHostAddressing) {
  // libcurl resolves *.localhost to loopback itself; s3rver (serviceEndpoint "localhost") takes
  // the bucket from "<bucket>.s3.localhost".
  S3Options options = S3rverOptions(port_);
  options.endpoint = "http://s3.localhost:" + std::to_string(port_);
  options.path_style = false;
  auto io = Open(options);
  const std::string loc = Loc("vhost/a b+c.txt");
  ASSERT_TRUE(io->CreateExclusive(loc, "virtual").ok());
  EXPECT_EQ(io->Read(loc).ValueOr(""), "virtual");
  EXPECT_EQ(io_->Read(loc).ValueOr(""), "virtual") << "path-style sees the same object";
  EXPECT_EQ(io->List(Loc("vhost")).ValueOr({}).size(), 1u);
  EXPECT_TRUE(io->Delete(loc).ok());
}

TEST_F(S3FileIOTest, PresignedUrlFetchesTheObject) {
  const std::string loc = Loc("presigned/x y.txt");
  ASSERT_TRUE(io_->Overwrite(loc, "presigned content").ok());
  Result<std::string> url = io_->PresignUrl("GET", loc, 300);
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_NE(url->find("X-Amz-Signature="), std::string::npos);
  auto client = HttpClient::Make();
  HttpRequest req;
  req.url = *url;
  Result<HttpResponse> r = client->Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "presigned content");
}

TEST_F(S3FileIOTest, S3cmdListsAndFetchesWhatSkadeWrote) {
  testing::ProcessResult probe = testing::RunProcess("s3cmd --version");
  ASSERT_EQ(probe.exit_code, 0) << "s3cmd is required (scripts/setup.sh installs it)";
  testing::TempDir tmp;
  const std::string host = "127.0.0.1:" + std::to_string(port_);
  testing::WriteFileOrDie(tmp.Path("s3cfg"),
                          "[default]\naccess_key = S3RVER\nsecret_key = S3RVER\n"
                          "host_base = " +
                              host + "\nhost_bucket = " + host +
                              "\nuse_https = False\nbucket_location = us-east-1\n"
                              "signature_v2 = False\n");
  const std::string plain = Loc("s3cmd/plain.txt");
  const std::string odd = Loc("s3cmd/odd name+ü.bin");
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  ASSERT_TRUE(io_->CreateExclusive(plain, "hello from skade").ok());
  ASSERT_TRUE(io_->CreateExclusive(odd, binary).ok());
  const std::string s3cmd = "s3cmd -c " + testing::ShellQuote(tmp.Path("s3cfg")) + " ";
  testing::ProcessResult ls =
      testing::RunProcess(s3cmd + "ls " + testing::ShellQuote(Loc("s3cmd/")));
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find(plain), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find(odd), std::string::npos) << ls.out;
  for (const auto& [loc, content] :
       {std::pair{plain, std::string("hello from skade")}, std::pair{odd, binary}}) {
    const std::string out = tmp.Path("got-" + std::to_string(content.size()));
    testing::ProcessResult get = testing::RunProcess(
        s3cmd + "get --force " + testing::ShellQuote(loc) + " " + testing::ShellQuote(out));
    ASSERT_EQ(get.exit_code, 0) << get.err;
    EXPECT_EQ(testing::ReadFileOrDie(out), content);
  }
}

// ---- loopback servers standing in for a misbehaving S3 ------------------------------------------

S3Options LoopbackOptions(const std::string& url, int attempts) {
  S3Options o;
  o.endpoint = url;
  o.access_key_id = "AKID";
  o.secret_access_key = "secret";
  o.retry.max_attempts = attempts;
  o.retry.initial_backoff = 5ms;
  o.retry.max_backoff = 20ms;
  return o;
}

constexpr const char* kSlowDown =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
    "<Message>Please reduce your request rate.</Message></Error>";

TEST(S3FileIOLoopbackTest, RetriesSlowDownThenSucceeds) {
  HttplibServer server;
  std::atomic<int> calls{0};
  server.server().Get("/b/k", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_header_value("Authorization").rfind("AWS4-HMAC-SHA256 Credential=AKID/", 0),
              0u);
    if (++calls <= 2) {
      res.status = 503;
      res.set_content(kSlowDown, "application/xml");
      return;
    }
    res.set_content("payload", "application/octet-stream");
  });
  ASSERT_GT(server.Start(), 0);
  auto io = MakeS3FileIO(LoopbackOptions(server.Url(), 4));
  Result<std::string> r = io->Read("s3://b/k");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "payload");
  EXPECT_EQ(calls.load(), 3);
}

TEST(S3FileIOLoopbackTest, PersistentServerErrorIsUnavailableAfterBoundedRetries) {
  HttplibServer server;
  std::atomic<int> calls{0};
  server.server().Get("/b/k", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 500;
    res.set_content("<Error><Code>InternalError</Code><Message>boom</Message></Error>",
                    "application/xml");
  });
  server.server().Put("/b/slow", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 503;
    res.set_content(kSlowDown, "application/xml");
  });
  ASSERT_GT(server.Start(), 0);
  auto io = MakeS3FileIO(LoopbackOptions(server.Url(), 3));
  Result<std::string> r = io->Read("s3://b/k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("InternalError"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("s3://b/k"), std::string::npos) << r.status().message();
  EXPECT_EQ(calls.load(), 3);
  Status st = io->Overwrite("s3://b/slow", "x");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("SlowDown"), std::string::npos) << st.message();
  EXPECT_EQ(calls.load(), 6);
}

TEST(S3FileIOLoopbackTest, TruncatedBodyIsAnError) {
  RawServer server(
      "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"x\"\r\n\r\nthe first few bytes only");
  ASSERT_GT(server.port(), 0);
  auto io = MakeS3FileIO(LoopbackOptions(server.Url(), 2));
  Result<std::string> r = io->Read("s3://b/k");
  ASSERT_FALSE(r.ok()) << "short data returned as success";
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(io->ReadRange("s3://b/k", 0, 1000).ok());
}

TEST(S3FileIOLoopbackTest, ErrorCodesMapFromS3Errors) {
  HttplibServer server;
  auto error = [](int status, std::string code) {
    return [status, code](const httplib::Request&, httplib::Response& res) {
      res.status = status;
      res.set_content("<Error><Code>" + code + "</Code><Message>m &amp; n</Message></Error>",
                      "application/xml");
    };
  };
  server.server().Get("/b/denied", error(403, "AccessDenied"));
  server.server().Get("/b/sig", error(403, "SignatureDoesNotMatch"));
  server.server().Get("/b/gone", error(404, "NoSuchKey"));
  server.server().Get("/b/bad", error(400, "InvalidRequest"));
  ASSERT_GT(server.Start(), 0);
  auto io = MakeS3FileIO(LoopbackOptions(server.Url(), 2));
  EXPECT_EQ(io->Read("s3://b/denied").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(io->Read("s3://b/sig").status().code(), StatusCode::kPermissionDenied);
  Status gone = io->Read("s3://b/gone").status();
  EXPECT_EQ(gone.code(), StatusCode::kNotFound);
  Status bad = io->Read("s3://b/bad").status();
  EXPECT_EQ(bad.code(), StatusCode::kIoError);
  EXPECT_NE(bad.message().find("InvalidRequest: m & n"), std::string::npos) << bad.message();
  EXPECT_EQ(bad.message().find("secret"), std::string::npos);
}

TEST(S3FileIOLoopbackTest, MultipartProtocolAndAbortOnFailure) {
  HttplibServer server;
  std::mutex mu;
  std::vector<std::string> log;
  std::map<int, std::string> parts;
  std::string completed;
  bool fail_part_two = false;
  auto record = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(s);
  };
  server.server().Post("/b/big", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("uploads")) {
      record("create");
      res.set_content(
          "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>big</Key>"
          "<UploadId>up-1</UploadId></InitiateMultipartUploadResult>",
          "application/xml");
      return;
    }
    record("complete " + req.get_param_value("uploadId") + " " +
           req.get_header_value("If-None-Match"));
    completed = req.body;
    res.set_content(
        "<CompleteMultipartUploadResult><ETag>\"e\"</ETag></CompleteMultipartUploadResult>",
        "application/xml");
  });
  server.server().Put("/b/big", [&](const httplib::Request& req, httplib::Response& res) {
    int n = std::stoi(req.get_param_value("partNumber"));
    record("part " + std::to_string(n));
    if (n == 2 && fail_part_two) {
      res.status = 400;
      res.set_content("<Error><Code>EntityTooSmall</Code><Message>small</Message></Error>",
                      "application/xml");
      return;
    }
    EXPECT_EQ(req.get_header_value("x-amz-content-sha256"), Sha256Hex(req.body));
    parts[n] = req.body;
    res.set_header("ETag", "\"etag-" + std::to_string(n) + "\"");
  });
  server.server().Delete("/b/big", [&](const httplib::Request& req, httplib::Response& res) {
    record("abort " + req.get_param_value("uploadId"));
    res.status = 204;
  });
  ASSERT_GT(server.Start(), 0);
  S3Options options = LoopbackOptions(server.Url(), 2);
  options.multipart_threshold = 10;
  options.multipart_part_size = 10;
  auto io = MakeS3FileIO(options);
  ASSERT_TRUE(io->CreateExclusive("s3://b/big", "0123456789abcdefghijKLM").ok());
  EXPECT_EQ(log,
            (std::vector<std::string>{"create", "part 1", "part 2", "part 3", "complete up-1 *"}));
  EXPECT_EQ(parts[1] + parts[2] + parts[3], "0123456789abcdefghijKLM");
  EXPECT_NE(
      completed.find("<Part><PartNumber>3</PartNumber><ETag>&quot;etag-3&quot;</ETag></Part>"),
      std::string::npos)
      << completed;

  log.clear();
  fail_part_two = true;
  Status st = io->Overwrite("s3://b/big", "0123456789abcdefghijKLM");
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("EntityTooSmall"), std::string::npos) << st.message();
  EXPECT_EQ(log, (std::vector<std::string>{"create", "part 1", "part 2", "abort up-1"}));
}

TEST(S3FileIOLoopbackTest, InvalidOptions) {
  S3Options o;
  o.endpoint = "ftp://x";
  EXPECT_EQ(S3FileIO::Open(o).status().code(), StatusCode::kInvalidArgument);
  auto io = MakeS3FileIO(o);
  EXPECT_EQ(io->Read("s3://b/k").status().code(), StatusCode::kInvalidArgument);
  o.endpoint = "http://h:1/path";
  EXPECT_EQ(S3FileIO::Open(o).status().code(), StatusCode::kInvalidArgument);
  o.endpoint = "";
  o.list_page_size = 0;
  EXPECT_EQ(S3FileIO::Open(o).status().code(), StatusCode::kInvalidArgument);
  o.list_page_size = 1000;
  o.access_key_id = "only-the-key";
  EXPECT_EQ(S3FileIO::Open(o).status().code(), StatusCode::kInvalidArgument);
}

// ---- parsing -----------------------------------------------------------------------------------

TEST(S3LocationTest, ParsesSchemesBucketsAndKeys) {
  Result<S3Location> l = ParseS3Location("s3a://bucket/a/b c.txt");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->scheme, "s3a");
  EXPECT_EQ(l->bucket, "bucket");
  EXPECT_EQ(l->key, "a/b c.txt");
  EXPECT_EQ(ParseS3Location("s3://bucket").ValueOr({}).key, "");
  EXPECT_EQ(ParseS3Location("s3://bucket/").ValueOr({}).bucket, "bucket");
  EXPECT_FALSE(ParseS3Location("s3:///key").ok());
  EXPECT_FALSE(ParseS3Location("/local/path").ok());
  EXPECT_FALSE(ParseS3Location("hdfs://nn/x").ok());
}

TEST(XmlTest, ParsesS3ShapedDocumentsWithEntities) {
  Result<XmlElement> xml = ParseXml(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- c -->"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Contents><Key>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#39;f&#x27; &#x65E5;&#26412;"
      "</Key><Size>12</Size></Contents><Contents><Key><![CDATA[raw <&> text]]></Key></Contents>"
      "<Empty/><s3:Prefixed a='1' b=\"x>y\">v</s3:Prefixed></ListBucketResult>\n");
  ASSERT_TRUE(xml.ok()) << xml.status().ToString();
  EXPECT_EQ(xml->name, "ListBucketResult");
  std::vector<const XmlElement*> contents = xml->Children("Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(contents[0]->ChildText("Key"), "a & b <c> \"d\" 'e' 'f' 日本");
  EXPECT_EQ(contents[0]->ChildText("Size"), "12");
  EXPECT_EQ(contents[1]->ChildText("Key"), "raw <&> text");
  EXPECT_NE(xml->Child("Empty"), nullptr);
  EXPECT_EQ(xml->ChildText("Prefixed"), "v");
  EXPECT_EQ(xml->ChildText("Missing"), "");
  EXPECT_EQ(XmlEscape("a&b<c>\"'"), "a&amp;b&lt;c&gt;&quot;&apos;");
  Result<XmlElement> round = ParseXml("<K>" + XmlEscape("x & <y> 'z'") + "</K>");
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->text, "x & <y> 'z'");
}

TEST(XmlTest, RejectsMalformedDocuments) {
  for (const char* bad :
       {"", "text", "<a>", "<a></b>", "<a>&bogus;</a>", "<a>&#0;</a>", "<a>&#xD800;</a>",
        "<a>&amp</a>", "<a></a><b></b>", "<a></a>trailing",
        "<!DOCTYPE x [<!ENTITY e \"x\">]><a>&e;</a>", "<a b=c></a>", "<a><![CDATA[x</a>"}) {
    EXPECT_EQ(ParseXml(bad).status().code(), StatusCode::kCorruption) << bad;
  }
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "<a>";
  EXPECT_FALSE(ParseXml(deep).ok());
}

// ---- options from the environment --------------------------------------------------------------

TEST(S3OptionsTest, FromEnvironmentVariables) {
  std::map<std::string, std::string> env = {{"HOME", "/nonexistent-home"},
                                            {"AWS_ACCESS_KEY_ID", "AKENV"},
                                            {"AWS_SECRET_ACCESS_KEY", "secret-env"},
                                            {"AWS_SESSION_TOKEN", "token-env"},
                                            {"AWS_DEFAULT_REGION", "eu-west-1"},
                                            {"AWS_REGION", "eu-north-1"},
                                            {"AWS_ENDPOINT_URL", "http://generic:1"},
                                            {"AWS_ENDPOINT_URL_S3", "http://s3-specific:2"}};
  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  Result<S3Options> o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->access_key_id, "AKENV");
  EXPECT_EQ(o->secret_access_key, "secret-env");
  EXPECT_EQ(o->session_token, "token-env");
  EXPECT_EQ(o->region, "eu-north-1");
  EXPECT_EQ(o->endpoint, "http://s3-specific:2");
  EXPECT_FALSE(o->path_style.has_value());
  env.erase("AWS_REGION");
  env.erase("AWS_ENDPOINT_URL_S3");
  o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->region, "eu-west-1");
  EXPECT_EQ(o->endpoint, "http://generic:1");
}

TEST(S3OptionsTest, FromProfiles) {
  testing::TempDir tmp;
  testing::WriteFileOrDie(tmp.Path("home/.aws/credentials"),
                          "# comment\n[default]\naws_access_key_id = AKDEFAULT\n"
                          "aws_secret_access_key = secret-default\n\n"
                          "[lake]\naws_access_key_id=AKLAKE\naws_secret_access_key = secret/lake+\n"
                          "aws_session_token = tok-lake\n");
  testing::WriteFileOrDie(
      tmp.Path("home/.aws/config"),
      "[default]\nregion = us-west-2\n\n"
      "[profile lake]\nregion = ap-southeast-2\n"
      "s3 =\n  addressing_style = path\n  endpoint_url = http://minio:9000\n"
      "[profile cfg-only]\naws_access_key_id = AKCFG\n"
      "aws_secret_access_key = secret-cfg\nendpoint_url = https://r2.example\n");
  std::map<std::string, std::string> env = {{"HOME", tmp.Path("home")}};
  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  Result<S3Options> o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->access_key_id, "AKDEFAULT");
  EXPECT_EQ(o->region, "us-west-2");
  EXPECT_EQ(o->endpoint, "");

  env["AWS_PROFILE"] = "lake";
  o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->access_key_id, "AKLAKE");
  EXPECT_EQ(o->secret_access_key, "secret/lake+");
  EXPECT_EQ(o->session_token, "tok-lake");
  EXPECT_EQ(o->region, "ap-southeast-2");
  EXPECT_EQ(o->endpoint, "http://minio:9000");
  EXPECT_EQ(o->path_style, std::optional<bool>(true));

  env["AWS_PROFILE"] = "cfg-only";
  o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->access_key_id, "AKCFG");
  EXPECT_EQ(o->endpoint, "https://r2.example");
  EXPECT_EQ(o->region, "us-east-1");

  // Environment credentials beat the profile's.
  env["AWS_ACCESS_KEY_ID"] = "AKENV";
  env["AWS_SECRET_ACCESS_KEY"] = "secret-env";
  o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->access_key_id, "AKENV");
  EXPECT_EQ(o->session_token, "");

  env["AWS_PROFILE"] = "missing";
  EXPECT_EQ(S3OptionsFromEnvironment(lookup).status().code(), StatusCode::kNotFound);

  // Overridden file paths.
  testing::WriteFileOrDie(tmp.Path("creds2"),
                          "[other]\naws_access_key_id = AKOTHER\n"
                          "aws_secret_access_key = s\n");
  env = {{"HOME", tmp.Path("home")},
         {"AWS_PROFILE", "other"},
         {"AWS_SHARED_CREDENTIALS_FILE", tmp.Path("creds2")},
         {"AWS_CONFIG_FILE", tmp.Path("no-such-config")}};
  o = S3OptionsFromEnvironment(lookup);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->access_key_id, "AKOTHER");
  EXPECT_EQ(o->region, "us-east-1");
}

}  // namespace
}  // namespace skade::io
