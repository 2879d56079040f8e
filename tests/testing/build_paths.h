// Where this build's sources, fixtures and programs are.
//
// The paths are compiled into one file that CMake generates in the build folder
// (build_paths.cc), not passed to every test's compile line: a clone in another folder (CI
// clones afresh) then finds every other object in the compiler cache.
#pragma once

namespace skade::testing {

const char* SourceDir();         // the repository's root
const char* BinaryDir();         // the build folder
const char* FixturesDir();       // ../shared/fixtures (read-only)
const char* CliPath();           // the skade binary of this build
const char* AppendWriterPath();  // tests/append_writer of this build (table_test's child)
const char* RestServerChildPath();  // tests/rest_server_child of this build (rest_test's child)

}  // namespace skade::testing
