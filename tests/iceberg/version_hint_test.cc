#include "skade/iceberg/version_hint.h"

#include <string>

#include <gtest/gtest.h>

#include "skade/io/file_io.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

// A hint that names nothing readable — NUL bytes from a torn write, garbage, a missing version —
// falls back to the newest metadata file, like a missing hint.
TEST(VersionHintTest, UnusableHintsFallBackToTheNewestMetadataFile) {
  testing::TempDir tmp;
  auto io = io::MakeLocalFileIO();
  testing::WriteFileOrDie(tmp.Path("t/metadata/v1.metadata.json"), "{}");
  testing::WriteFileOrDie(tmp.Path("t/metadata/v2.metadata.json"), "{}");
  const std::string newest = tmp.Path("t/metadata/v2.metadata.json");
  for (const std::string& hint : {std::string(8, '\0'), std::string("\0\0\n", 3), std::string("7"),
                                  std::string("v9.metadata.json"), std::string("\x01\x02"), std::string("  \n")}) {
    testing::WriteFileOrDie(tmp.Path("t/metadata/version-hint.text"), hint);
    auto resolved = ResolveMetadataFile(*io, tmp.Path("t"));
    ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
    EXPECT_EQ(*resolved, newest);
  }
  testing::WriteFileOrDie(tmp.Path("t/metadata/version-hint.text"), "1\n");
  EXPECT_EQ(*ResolveMetadataFile(*io, tmp.Path("t")), tmp.Path("t/metadata/v1.metadata.json"));
}

}  // namespace
}  // namespace skade::iceberg
