#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "skade/io/file_io.h"
#include "skade/io/local_folders.h"
#include "skade/io/location_map.h"
#include "tests/testing/temp_dir.h"

namespace skade::io {
namespace {

TEST(LocalFileIOTest, CreateExclusiveNeverOverwrites) {
  testing::TempDir tmp;
  auto io = MakeLocalFileIO();
  std::string path = tmp.Path("a/b/v1.metadata.json");
  ASSERT_TRUE(io->CreateExclusive(path, "first").ok());
  EXPECT_EQ(io->CreateExclusive(path, "second").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*io->Read(path), "first");
  EXPECT_EQ(*io->Read("file://" + path), "first");
  EXPECT_EQ(*io->Read("file:" + path), "first");
  // No temporary files are left behind.
  EXPECT_EQ(io->List(tmp.path())->size(), 1u);
}

TEST(LocalFileIOTest, CreateUnpublishedWritesOneNameOnceAndSyncsFolders) {
  testing::TempDir tmp;
  auto io = MakeLocalFileIO();
  const std::string a = tmp.Path("t/metadata/snap-1.avro");
  const std::string b = "file://" + tmp.Path("t/data/x.parquet");
  ASSERT_TRUE(io->CreateUnpublished(a, "list").ok());  // parent folders made
  ASSERT_TRUE(io->CreateUnpublished(b, "data").ok());
  EXPECT_EQ(io->CreateUnpublished(a, "again").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*io->Read(a), "list");  // the existing file is untouched
  EXPECT_EQ(*io->Read(b), "data");
  // Written under its own name only: no temporary file, before or after.
  EXPECT_EQ(io->List(tmp.path())->size(), 2u);
  EXPECT_TRUE(io->SyncFolders({a, b, tmp.Path("t/metadata/other")}).ok());
  EXPECT_EQ(io->SyncFolders({tmp.Path("missing/f")}).code(), StatusCode::kNotFound);
  // Through a location map, the mapped folder is the one synced.
  LocationMap map;
  map.Add("/nowhere/t", tmp.Path("t"));
  auto mapped = MakeRelocatingFileIO(*io, map);
  ASSERT_TRUE(mapped->CreateUnpublished("/nowhere/t/metadata/m.avro", "m").ok());
  EXPECT_EQ(*io->Read(tmp.Path("t/metadata/m.avro")), "m");
  EXPECT_TRUE(mapped->SyncFolders({"/nowhere/t/metadata/m.avro"}).ok());
}

TEST(LocalFileIOTest, CreateUnsyncedWritesOnceAndSyncFilesNamesWhatFails) {
  testing::TempDir tmp;
  auto io = MakeLocalFileIO();
  const std::string a = tmp.Path("t/metadata/m0.avro");
  const std::string b = "file://" + tmp.Path("t/data/x.parquet");
  ASSERT_TRUE(io->CreateUnsynced(a, "manifest").ok());
  ASSERT_TRUE(io->CreateUnsynced(b, "data").ok());
  EXPECT_EQ(io->CreateUnsynced(a, "again").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*io->Read(a), "manifest");
  EXPECT_EQ(io->List(tmp.path())->size(), 2u);  // no temporary names
  EXPECT_TRUE(io->SyncFiles({a, b}).ok());
  EXPECT_TRUE(io->SyncFolders({a, b}).ok());
  Status missing = io->SyncFiles({a, tmp.Path("t/data/gone.parquet")});
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("gone.parquet"), std::string::npos) << missing.ToString();
}

// Each folder made gets its entry synced in its parent, shallowest first; existing folders
// cost nothing.
// What a purge leaves of a table's folder: the empty folders go, deepest first, the root too;
// a folder holding anything stays, and a symbolic link is an entry, never followed.
TEST(LocalFoldersTest, RemoveEmptyFoldersNeverFollowsALinkNorRemovesAFolderWithFiles) {
  namespace fs = std::filesystem;
  testing::TempDir tmp;
  fs::create_directories(tmp.Path("outside/empty/deeper"));
  fs::create_directories(tmp.Path("t/data/a=1/b=2"));
  fs::create_directories(tmp.Path("t/metadata"));
  fs::create_directories(tmp.Path("t/kept"));
  ASSERT_TRUE(MakeLocalFileIO()->CreateExclusive(tmp.Path("t/kept/file"), "x").ok());
  fs::create_directory_symlink(tmp.Path("outside"), tmp.Path("t/data/link"));
  Result<int64_t> removed = RemoveEmptyFolders(tmp.Path("t"));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 3);  // b=2, a=1, metadata
  EXPECT_FALSE(fs::exists(tmp.Path("t/data/a=1")));
  EXPECT_FALSE(fs::exists(tmp.Path("t/metadata")));
  EXPECT_TRUE(fs::is_symlink(tmp.Path("t/data/link")));
  EXPECT_TRUE(fs::is_directory(tmp.Path("outside/empty/deeper"))) << "a link's target is never entered";
  EXPECT_TRUE(fs::exists(tmp.Path("t/kept/file")));

  // Once only empty folders are left, the root goes too; a link as the root is left alone.
  fs::remove(tmp.Path("t/data/link"));
  fs::remove(tmp.Path("t/kept/file"));
  removed = RemoveEmptyFolders("file://" + tmp.Path("t/"));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 3);  // data, kept, t
  EXPECT_FALSE(fs::exists(tmp.Path("t")));
  fs::create_directory_symlink(tmp.Path("outside"), tmp.Path("root_link"));
  removed = RemoveEmptyFolders(tmp.Path("root_link"));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0);
  EXPECT_TRUE(fs::is_directory(tmp.Path("outside/empty/deeper")));
  EXPECT_EQ(*RemoveEmptyFolders(tmp.Path("absent")), 0);
}

TEST(LocalFoldersTest, CreateFoldersDurablySyncsTheParentOfEachFolderItMakes) {
  testing::TempDir tmp;
  std::vector<std::string> synced;
  auto record = [&](const std::string& folder) {
    synced.push_back(folder);
    return SyncFolder(folder);
  };
  ASSERT_TRUE(CreateFoldersDurably(tmp.Path("a/b/c"), record).ok());
  EXPECT_TRUE(std::filesystem::is_directory(tmp.Path("a/b/c")));
  EXPECT_EQ(synced, (std::vector<std::string>{tmp.path(), tmp.Path("a"), tmp.Path("a/b")}));
  synced.clear();
  ASSERT_TRUE(CreateFoldersDurably(tmp.Path("a/b/c/"), record).ok());
  ASSERT_TRUE(CreateFoldersDurably("file://" + tmp.Path("a/b"), record).ok());
  EXPECT_TRUE(synced.empty());
  ASSERT_TRUE(CreateFoldersDurably(tmp.Path("a/x"), record).ok());
  EXPECT_EQ(synced, (std::vector<std::string>{tmp.Path("a")}));

  // A file in the way is an error naming it; a failed sync fails the call.
  ASSERT_TRUE(MakeLocalFileIO()->CreateExclusive(tmp.Path("f"), "x").ok());
  Status blocked = CreateFoldersDurably(tmp.Path("f/g"), record);
  EXPECT_EQ(blocked.code(), StatusCode::kIoError);
  EXPECT_NE(blocked.message().find(tmp.Path("f")), std::string::npos) << blocked.ToString();

  // A failed sync removes what the call made, so the next call makes and syncs it again.
  synced.clear();
  Status failed = CreateFoldersDurably(tmp.Path("y/z"), [&](const std::string& f) {
    synced.push_back(f);
    return synced.size() == 2 ? Status::IoError("no sync of " + f) : SyncFolder(f);
  });
  EXPECT_EQ(failed.code(), StatusCode::kIoError);
  EXPECT_FALSE(std::filesystem::exists(tmp.Path("y")));
  synced.clear();
  ASSERT_TRUE(CreateFoldersDurably(tmp.Path("y/z"), record).ok());
  EXPECT_EQ(synced, (std::vector<std::string>{tmp.path(), tmp.Path("y")}));
}

// Racing creators of one tree all succeed (a level another made first is no error), and the
// parent of every level made is synced by one of them.
TEST(LocalFoldersTest, ConcurrentCreatorsOfOneTreeAllSucceed) {
  testing::TempDir tmp;
  std::atomic<int> failures{0};
  std::mutex mu;
  std::set<std::string> synced;
  auto record = [&](const std::string& folder) {
    {
      std::lock_guard<std::mutex> lock(mu);
      synced.insert(folder);
    }
    return SyncFolder(folder);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      if (!CreateFoldersDurably(tmp.Path("r/s/" + std::to_string(t % 2)), record).ok()) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(std::filesystem::is_directory(tmp.Path("r/s/0")));
  EXPECT_TRUE(std::filesystem::is_directory(tmp.Path("r/s/1")));
  EXPECT_EQ(synced, (std::set<std::string>{tmp.path(), tmp.Path("r"), tmp.Path("r/s")}));
}

TEST(LocalFoldersTest, FoldersBetweenARootAndItsFilesParentsFirst) {
  EXPECT_EQ(FoldersBetween("/t/data/", {"/t/data/k=a/n=1/f1.parquet", "/t/data/k=a/n=2/f2.parquet",
                                       "/t/data/k=b/f3.parquet", "/t/data/f4.parquet",
                                       "/t/database/x/f5.parquet", "/elsewhere/y/f6.parquet"}),
            (std::vector<std::string>{"/t/data/k=a", "/t/data/k=a/n=1", "/t/data/k=a/n=2", "/t/data/k=b"}));
  EXPECT_TRUE(FoldersBetween("/t/data", {"/t/data", "/t/data/"}).empty());
  // One normalisation before comparing: doubled slashes, "./", file: forms, the root "/".
  EXPECT_EQ(FoldersBetween("file:///t/./data", {"/t/data//k=a/f", "file:/t/data/k=b/./f"}),
            (std::vector<std::string>{"/t/data/k=a", "/t/data/k=b"}));
  EXPECT_EQ(FoldersBetween("/", {"/a/b/f"}), (std::vector<std::string>{"/a", "/a/b"}));
  EXPECT_EQ(FoldersBetween("t/data", {"t/data/k=a/f", "/t/data/k=b/f"}), (std::vector<std::string>{"t/data/k=a"}));
}

TEST(LocalFoldersTest, SyncFolderEntriesSyncsEachParentAndNamesAMissingOne) {
  testing::TempDir tmp;
  ASSERT_TRUE(CreateFoldersDurably(tmp.Path("a/b")).ok());
  EXPECT_TRUE(SyncFolderEntries({tmp.Path("a/b"), tmp.Path("a/b/file"), "file://" + tmp.Path("a/other")}).ok());
  Status missing = SyncFolderEntries({tmp.Path("gone/file")});
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find(tmp.Path("gone")), std::string::npos) << missing.ToString();
}

TEST(LocalFileIOTest, TemporaryWriteNames) {
  std::string tmp = TemporaryWriteName("/w/t/metadata/version-hint.text", "0192-ab");
  EXPECT_EQ(tmp, "/w/t/metadata/version-hint.text.tmp-0192-ab");
  EXPECT_TRUE(IsTemporaryWrite(tmp));
  EXPECT_TRUE(IsTemporaryWrite("file:///w/t/data/a.parquet.tmp-x"));
  EXPECT_FALSE(IsTemporaryWrite("/w/t/data/a.parquet"));
  EXPECT_FALSE(IsTemporaryWrite("/w/t.tmp-x/data/a.parquet"));  // only the file's own name counts
  EXPECT_FALSE(IsTemporaryWrite("/w/t/data/.tmp-x"));           // no target name
  EXPECT_FALSE(IsTemporaryWrite("/w/t/data/a.parquet.tmp-"));   // no unique part
}

TEST(LocalFileIOTest, ConcurrentCreatorsExactlyOneWins) {
  testing::TempDir tmp;
  auto io = MakeLocalFileIO();
  std::string path = tmp.Path("race");
  std::atomic<int> wins{0}, losses{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Status s = io->CreateExclusive(path, std::string(1000, static_cast<char>('a' + t)));
      (s.ok() ? wins : losses)++;
      if (!s.ok()) {
        EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(losses.load(), 7);
  std::string content = *io->Read(path);
  EXPECT_EQ(content, std::string(1000, content[0]));
}

TEST(LocalFileIOTest, ReadsRangesStatsListsAndDeletes) {
  testing::TempDir tmp;
  auto io = MakeLocalFileIO();
  ASSERT_TRUE(io->Overwrite(tmp.Path("d/x"), "0123456789").ok());
  ASSERT_TRUE(io->Overwrite(tmp.Path("d/x"), "abcdefghij").ok());
  EXPECT_EQ(*io->ReadRange(tmp.Path("d/x"), 2, 3), "cde");
  EXPECT_EQ(*io->ReadRange(tmp.Path("d/x"), 8, 10), "ij");
  EXPECT_EQ(io->Stat(tmp.Path("d/x"))->size, 10);
  EXPECT_EQ(io->Read(tmp.Path("missing")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(io->Stat(tmp.Path("missing")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(io->ReadRange(tmp.Path("d/x"), -1, 2).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(io->CreateExclusive(tmp.Path("d/e/y"), "").ok());
  EXPECT_EQ(io->List(tmp.Path("d"))->size(), 2u);
  EXPECT_TRUE(io->List(tmp.Path("nothing-here"))->empty());
  EXPECT_TRUE(io->Delete(tmp.Path("d/x")).ok());
  EXPECT_TRUE(io->Delete(tmp.Path("d/x")).ok());
  EXPECT_EQ(io->List(tmp.Path("d"))->size(), 1u);
  EXPECT_EQ(io->Read(tmp.path()).status().code(), StatusCode::kInvalidArgument);
}

TEST(LocationMapTest, RewritesWholeComponentPrefixes) {
  LocationMap map;
  map.Add("/warehouse/db/t", "/local/t/");
  map.Add("/warehouse/db/t/data", "/fast/data");
  map.Add("s3://bucket/t", "/copy/t");
  EXPECT_EQ(map.Apply("/warehouse/db/t/metadata/v1.json"), "/local/t/metadata/v1.json");
  EXPECT_EQ(map.Apply("/warehouse/db/t/data/f.parquet"), "/fast/data/f.parquet");
  EXPECT_EQ(map.Apply("file:///warehouse/db/t/x"), "/local/t/x");
  EXPECT_EQ(map.Apply("/warehouse/db/t2/x"), "/warehouse/db/t2/x");  // not a whole component
  EXPECT_EQ(map.Apply("s3://bucket/t/data/a"), "/copy/t/data/a");
  EXPECT_EQ(map.Apply("other"), "other");
  EXPECT_EQ(JoinLocation("a/", "/b"), "a/b");
  EXPECT_EQ(LocalPath("file:/x/y"), "/x/y");
}

// One rule covers every spelling writers give its root: file-system authorities (Hive,
// Impala and Spark on HDFS), file: forms and the s3a/s3n aliases.
TEST(LocationMapTest, MatchesOtherSpellingsOfARootThroughTheComparableForm) {
  LocationMap map;
  map.Add("hdfs://namenode:8020/warehouse/db/t", "/local/t");
  map.Add("s3://bucket/wh/t", "/copy/t");
  EXPECT_EQ(map.Apply("/warehouse/db/t/data/f.parquet"), "/local/t/data/f.parquet");
  EXPECT_EQ(map.Apply("hdfs://other-nn/warehouse/db/t/data/f.parquet"), "/local/t/data/f.parquet");
  EXPECT_EQ(map.Apply("file:///warehouse/db/t//metadata/m.avro"), "/local/t/metadata/m.avro");
  EXPECT_EQ(map.Apply("s3a://bucket/wh/t/data/x.parquet"), "/copy/t/data/x.parquet");
  EXPECT_EQ(map.Apply("s3n://bucket/wh/t"), "/copy/t");
  // Buckets stay part of the name, and only whole components match.
  EXPECT_EQ(map.Apply("s3a://other/wh/t/x"), "s3a://other/wh/t/x");
  EXPECT_EQ(map.Apply("/warehouse/db/t2/x"), "/warehouse/db/t2/x");
}

TEST(LocationMapTest, RelocatingFileIODelegates) {
  testing::TempDir tmp;
  auto io = MakeLocalFileIO();
  ASSERT_TRUE(io->Overwrite(tmp.Path("real/f"), "data").ok());
  LocationMap map;
  map.Add("/nowhere/table", tmp.Path("real"));
  auto relocated = MakeRelocatingFileIO(*io, map);
  EXPECT_EQ(*relocated->Read("/nowhere/table/f"), "data");
  EXPECT_EQ(relocated->Read("/nowhere/other").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace skade::io
