# Third-party dependencies: Debian packages (installed by scripts/setup.sh) and DuckDB from
# the pinned npm packages unpacked into third_party/duckdb.
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

set(SKADE_DUCKDB_ROOT "${PROJECT_SOURCE_DIR}/third_party/duckdb" CACHE PATH "DuckDB lib+include")
if(NOT EXISTS "${SKADE_DUCKDB_ROOT}/lib/libduckdb.so")
  message(FATAL_ERROR "DuckDB not found in ${SKADE_DUCKDB_ROOT}: run scripts/setup.sh")
endif()
add_library(duckdb SHARED IMPORTED)
set_target_properties(duckdb PROPERTIES
  IMPORTED_LOCATION "${SKADE_DUCKDB_ROOT}/lib/libduckdb.so"
  INTERFACE_INCLUDE_DIRECTORIES "${SKADE_DUCKDB_ROOT}/include")

if(SKADE_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  find_package(benchmark CONFIG REQUIRED)
endif()
