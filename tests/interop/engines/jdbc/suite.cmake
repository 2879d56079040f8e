# The Arrow Flight SQL JDBC driver (what DBeaver uses) against `skade serve --flight-port`:
# DatabaseMetaData browsing (nested namespaces as dotted schemas), queries compared with the rows
# the test wrote, prepared statements, writes read back through JDBC and the CLI, basic auth and
# TLS. The driver is pinned in pom.xml beside this file and installed by scripts/setup_interop.sh;
# run_suite.sh compiles JdbcSuite.java and runs it in one JVM (one ctest case, about 20 s).
add_test(NAME engines_jdbc COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_suite.sh)
set_tests_properties(engines_jdbc PROPERTIES
  ENVIRONMENT "SKADE_BIN=$<TARGET_FILE:skade>"
  LABELS "engines;engines_jdbc"
  TIMEOUT 300)
