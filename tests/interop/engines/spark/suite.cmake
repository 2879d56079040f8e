# Spark (PySpark in local mode + Iceberg's Spark runtime) against `skade serve --rest-port`:
# Spark writes and skade reads, skade writes and Spark reads, the commit log, concurrent writers.
# The engines are pinned in requirements.txt and pom.xml beside this file and installed by
# scripts/setup_interop.sh; run_suite.sh finds them (scripts/interop_env.sh) and runs pytest.
# One ctest case: the JVM starts once (about 10 s) and every test shares it. It keeps both
# cores busy, so it takes two of ctest's -j slots.
add_test(NAME engines_spark COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_suite.sh)
set_tests_properties(engines_spark PROPERTIES
  ENVIRONMENT "SKADE_BIN=$<TARGET_FILE:skade>"
  LABELS "engines;engines_spark"
  PROCESSORS 2
  TIMEOUT 900)
