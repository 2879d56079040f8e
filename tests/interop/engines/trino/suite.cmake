# Trino (the pinned server tarball, on a Java 25 JDK) against `skade serve --rest-port`: Trino's
# Iceberg connector writes partitioned tables (inserts, row-level updates and deletes, schema and
# partition evolution) that `skade scan` and `skade sql` read row for row, reads the tables skade
# writes row for row, and its commits show in `skade log`. The server is pinned in server.txt and
# pytest in requirements.txt beside this file, installed by scripts/setup_interop.sh;
# run_suite.sh finds them (scripts/interop_env.sh) and runs pytest. One ctest case: Trino starts
# once (about 10 s with its AOT class cache, 15-25 s on the run that trains it) and every test
# shares it. It keeps both cores busy, so it takes two of ctest's -j slots.
add_test(NAME engines_trino COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_suite.sh)
set_tests_properties(engines_trino PROPERTIES
  ENVIRONMENT "SKADE_BIN=$<TARGET_FILE:skade>"
  LABELS "engines;engines_trino"
  PROCESSORS 2
  TIMEOUT 900)
