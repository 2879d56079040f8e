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
# The suite again with the plain and the --auth basic server each three `skade serve` on the
# warehouse, sharing a key, behind nginx (round robin, no affinity; ../python/balanced_serve.py,
# as engines_python_balanced): every call of the driver may land on any server, and every server
# must answer some. The TLS cases are skipped there. About 25 s; skipped (77) without nginx or the
# Python interop virtualenv.
add_test(NAME engines_jdbc_balanced COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_suite.sh)
set_tests_properties(engines_jdbc_balanced PROPERTIES
  ENVIRONMENT "SKADE_BIN=$<TARGET_FILE:skade>;SKADE_BALANCED=1"
  LABELS "engines;engines_jdbc;engines_balanced;engines_jdbc_balanced"
  PROCESSORS 2
  SKIP_RETURN_CODE 77
  TIMEOUT 300)
