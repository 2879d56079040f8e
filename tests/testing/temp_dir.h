// Test helpers: a per-test temporary folder removed on destruction, and fixture and source paths.
#pragma once

#include <string>
#include <string_view>

namespace skade::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Path(std::string_view name) const;

 private:
  std::string path_;
};

// Absolute path of a file or folder under ../shared/fixtures.
std::string FixturePath(std::string_view relative);
// Whether ../shared/fixtures is there (a clone of the repository alone has none).
bool HaveFixtures();

// First statement of a test that reads ../shared/fixtures: without them the test is skipped,
// and says so (ctest lists it as skipped, not passed).
#define SKADE_SKIP_WITHOUT_FIXTURES()                                                           \
  if (!::skade::testing::HaveFixtures())                                                        \
  GTEST_SKIP() << "skipped: this test reads ../shared/fixtures, which this checkout does not have (" \
               << ::skade::testing::FixturePath("") << ")"
// Absolute path of a file or folder of this repository (tests/interop, a .proto, a script).
std::string SourcePath(std::string_view relative);
// Reads a whole file; aborts the test binary if it can't (tests only).
std::string ReadFileOrDie(const std::string& path);
// Writes a whole file, creating parent folders; aborts on failure (tests only).
void WriteFileOrDie(const std::string& path, std::string_view data);

}  // namespace skade::testing
