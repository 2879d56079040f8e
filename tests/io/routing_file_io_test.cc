// The routing FileIO and the one rule that tells object-store locations from local ones.
#include "skade/io/routing_file_io.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "skade/io/location.h"

namespace skade::io {
namespace {

// Records the locations it was asked for; every call succeeds.
class RecordingFileIO final : public FileIO {
 public:
  explicit RecordingFileIO(std::vector<std::string>* seen) : seen_(seen) {}
  Result<std::string> Read(std::string_view l) override { return Note(l); }
  Result<std::string> ReadRange(std::string_view l, int64_t, int64_t) override { return Note(l); }
  Result<FileInfo> Stat(std::string_view l) override {
    Note(l);
    return FileInfo{std::string(l), 0, 0};
  }
  Status CreateExclusive(std::string_view l, std::string_view) override { return Done(l); }
  Status Overwrite(std::string_view l, std::string_view) override { return Done(l); }
  Status Update(std::string_view l, const Change&) override { return Done(l); }
  Result<std::vector<FileInfo>> List(std::string_view l) override {
    Note(l);
    return std::vector<FileInfo>{};
  }
  Status Delete(std::string_view l) override { return Done(l); }
  Status CreateUnsynced(std::string_view l, std::string_view) override { return Done(l); }
  Status SyncFiles(const std::vector<std::string>& l) override { return Group("files", l); }
  Status SyncFolders(const std::vector<std::string>& l) override { return Group("folders", l); }

 private:
  Status Group(const std::string& what, const std::vector<std::string>& l) {
    std::string joined = what + ":";
    for (const std::string& x : l) joined += " " + x;
    return Done(joined);
  }
  std::string Note(std::string_view l) {
    seen_->emplace_back(l);
    return "ok";
  }
  Status Done(std::string_view l) {
    Note(l);
    return Status::Ok();
  }
  std::vector<std::string>* seen_;
};

TEST(LocationSchemeTest, NamesTheSchemeOrNone) {
  EXPECT_EQ(LocationScheme("s3://b/k"), "s3");
  EXPECT_EQ(LocationScheme("S3A://b/k"), "s3a");
  EXPECT_EQ(LocationScheme("file:/a/b"), "file");
  EXPECT_EQ(LocationScheme("FILE:///a"), "file");
  EXPECT_EQ(LocationScheme("hdfs://nn:8020/w"), "hdfs");
  EXPECT_EQ(LocationScheme("/abs/path"), "");
  EXPECT_EQ(LocationScheme("rel/path"), "");
  EXPECT_EQ(LocationScheme("c:d"), "");
  EXPECT_EQ(LocationScheme("/a/b://c"), "");
  EXPECT_EQ(LocationScheme("://x"), "");
}

TEST(LocationSchemeTest, ObjectStoresAreS3InAnySpelling) {
  for (const char* l : {"s3://b/k", "s3a://b/k", "s3n://b", "S3://B/K"}) {
    EXPECT_TRUE(IsObjectStoreLocation(l)) << l;
  }
  for (const char* l : {"/s3/b", "s3:/b/k", "file:///s3://b", "gs://b/k", "s3x://b", ""}) {
    EXPECT_FALSE(IsObjectStoreLocation(l)) << l;
  }
}

TEST(RoutingFileIOTest, RoutesEachCallByScheme) {
  std::vector<std::string> local_seen, s3_seen;
  auto io = MakeRoutingFileIO(std::make_unique<RecordingFileIO>(&local_seen),
                              std::make_unique<RecordingFileIO>(&s3_seen));
  EXPECT_TRUE(io->Read("s3://b/a").ok());
  EXPECT_TRUE(io->ReadRange("s3a://b/a", 0, 1).ok());
  EXPECT_TRUE(io->Stat("S3N://b/a").ok());
  EXPECT_TRUE(io->List("s3://b/p").ok());
  EXPECT_TRUE(io->CreateExclusive("s3://b/c", "x").ok());
  EXPECT_TRUE(io->Read("/tmp/a").ok());
  EXPECT_TRUE(io->Stat("file:///tmp/b").ok());
  EXPECT_TRUE(io->Delete("file:/tmp/c").ok());
  EXPECT_TRUE(io->Overwrite("relative/d", "x").ok());
  EXPECT_TRUE(io->Update("/tmp/e", [](const auto&) { return std::nullopt; }).ok());
  EXPECT_EQ(s3_seen, (std::vector<std::string>{"s3://b/a", "s3a://b/a", "S3N://b/a", "s3://b/p",
                                               "s3://b/c"}));
  EXPECT_EQ(local_seen, (std::vector<std::string>{"/tmp/a", "file:///tmp/b", "file:/tmp/c",
                                                  "relative/d", "/tmp/e"}));
}

// Calls naming many locations reach each FileIO once, with its own locations in order.
TEST(RoutingFileIOTest, SyncsEachStoresLocationsInOneCall) {
  std::vector<std::string> local_seen, s3_seen;
  auto io = MakeRoutingFileIO(std::make_unique<RecordingFileIO>(&local_seen),
                              std::make_unique<RecordingFileIO>(&s3_seen));
  EXPECT_TRUE(io->CreateUnsynced("/w/t/m.avro", "x").ok());
  EXPECT_TRUE(io->SyncFiles({"/w/t/a", "s3://b/x", "file:///w/t/b", "s3a://b/y"}).ok());
  EXPECT_TRUE(io->SyncFolders({"s3://b/x", "/w/t/a"}).ok());
  EXPECT_EQ(local_seen, (std::vector<std::string>{"/w/t/m.avro", "files: /w/t/a file:///w/t/b", "folders: /w/t/a"}));
  EXPECT_EQ(s3_seen, (std::vector<std::string>{"files: s3://b/x s3a://b/y", "folders: s3://b/x"}));
  // One location that goes nowhere fails the whole call, before any store is asked.
  EXPECT_EQ(io->SyncFiles({"/w/t/c", "hdfs://nn/x"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(local_seen.size(), 3u);
}

TEST(RoutingFileIOTest, RefusesOtherSchemes) {
  std::vector<std::string> local_seen, s3_seen;
  auto io = MakeRoutingFileIO(std::make_unique<RecordingFileIO>(&local_seen),
                              std::make_unique<RecordingFileIO>(&s3_seen));
  Result<std::string> read = io->Read("hdfs://nn:8020/w/f");
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find("hdfs"), std::string::npos) << read.status().ToString();
  EXPECT_EQ(io->List("gs://b/p").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(local_seen.empty());
  EXPECT_TRUE(s3_seen.empty());
}

TEST(RoutingFileIOTest, ObjectStoreLocationsNeedAnObjectStore) {
  std::vector<std::string> local_seen;
  auto io = MakeRoutingFileIO(std::make_unique<RecordingFileIO>(&local_seen), nullptr);
  EXPECT_EQ(io->Read("s3://b/k").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(io->CreateExclusive("s3a://b/k", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(io->Read("/tmp/x").ok());
  EXPECT_EQ(local_seen, (std::vector<std::string>{"/tmp/x"}));
}

}  // namespace
}  // namespace skade::io
