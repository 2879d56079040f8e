// The registry of files only their owner opens (the SQLite catalog's), and the confinement of
// a server's FileIO to its roots: every spelling of a path resolves to one answer.
#include "skade/io/reserved_files.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "skade/io/confined_file_io.h"
#include "skade/io/file_io.h"
#include "tests/testing/temp_dir.h"

namespace skade::io {
namespace {

TEST(ReservedFilesTest, EverySpellingOfAReservedFileIsRefused) {
  testing::TempDir tmp;
  const std::string db = tmp.Path("lake/catalog.db");
  testing::WriteFileOrDie(db, "SQLite format 3");
  testing::WriteFileOrDie(tmp.Path("lake/t/data.parquet"), "x");
  ReserveSqliteDatabase(db);
  ASSERT_EQ(::symlink(db.c_str(), tmp.Path("link.db").c_str()), 0);
  ASSERT_EQ(::link(db.c_str(), tmp.Path("lake/t/hard.parquet").c_str()), 0);
  for (const std::string& spelling :
       {db, "file://" + db, "file:" + db, tmp.Path("lake//catalog.db"), tmp.Path("lake/t/../catalog.db"),
        tmp.Path("lake/./catalog.db"), tmp.Path("link.db"), tmp.Path("lake/t/hard.parquet"),
        // Not there yet, but SQLite's: creating them under the catalog would break it.
        tmp.Path("lake/catalog.db-wal"), tmp.Path("lake/t/../catalog.db-journal")}) {
    EXPECT_TRUE(IsReservedFile(spelling)) << spelling;
  }
  EXPECT_FALSE(IsReservedFile(tmp.Path("lake/t/data.parquet")));
  EXPECT_FALSE(IsReservedFile(tmp.Path("lake/catalog.dbx")));
  EXPECT_FALSE(IsReservedFile("s3://bucket" + db));

  auto io = MakeLocalFileIO();
  for (const std::string& spelling : {db, tmp.Path("link.db"), tmp.Path("lake/t/hard.parquet")}) {
    EXPECT_EQ(io->Read(spelling).status().code(), StatusCode::kPermissionDenied) << spelling;
    EXPECT_EQ(io->ReadRange(spelling, 0, 4).status().code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(io->Delete(spelling).code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(io->Overwrite(spelling, "x").code(), StatusCode::kPermissionDenied);
  }
  EXPECT_EQ(io->CreateExclusive(tmp.Path("lake/catalog.db-shm"), "x").code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(std::filesystem::exists(tmp.Path("lake/catalog.db-shm")));
  EXPECT_EQ(testing::ReadFileOrDie(db), "SQLite format 3");
  EXPECT_TRUE(io->Read(tmp.Path("lake/t/data.parquet")).ok());
}

TEST(ConfinedFileIOTest, ReachesOnlyBelowItsRoots) {
  testing::TempDir tmp;
  testing::WriteFileOrDie(tmp.Path("lake/t/f"), "in");
  testing::WriteFileOrDie(tmp.Path("lake2/f"), "sibling");
  testing::WriteFileOrDie(tmp.Path("other/f"), "out");
  ConfinedFileIO io(MakeLocalFileIO(), {tmp.Path("lake")});
  EXPECT_EQ(*io.Read(tmp.Path("lake/t/f")), "in");
  EXPECT_EQ(*io.Read("file://" + tmp.Path("lake/t/f")), "in");
  for (const std::string& outside : {tmp.Path("lake2/f"), tmp.Path("other/f"), tmp.Path("lake/../other/f"),
                                     std::string("/etc/passwd"), std::string("file:///etc/passwd"), tmp.Path("lake/t/../../other/f")}) {
    EXPECT_EQ(io.Read(outside).status().code(), StatusCode::kPermissionDenied) << outside;
    EXPECT_EQ(io.Stat(outside).status().code(), StatusCode::kPermissionDenied) << outside;
    EXPECT_EQ(io.Delete(outside).code(), StatusCode::kPermissionDenied) << outside;
    EXPECT_EQ(io.CreateExclusive(outside + ".new", "x").code(), StatusCode::kPermissionDenied) << outside;
  }
  EXPECT_TRUE(std::filesystem::exists(tmp.Path("other/f")));
  io.AddRoot(tmp.Path("other"));
  EXPECT_EQ(*io.Read(tmp.Path("other/f")), "out");
}

}  // namespace
}  // namespace skade::io
