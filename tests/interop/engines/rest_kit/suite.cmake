# Iceberg's REST Compatibility Kit (the CatalogTests and ViewCatalogTests suites of the Iceberg
# Java project, run from their published jars by the JUnit console launcher) against
# `skade serve --rest-port`. The jars are pinned in pom.xml beside this file and copied by
# scripts/setup_interop.sh; run_suite.sh starts the servers, runs the kit and fails on any
# failure that expectations.txt does not list with its reason. About 30 s; the JVM and the server
# share the machine's cores, so it takes two of ctest's -j slots.
add_test(NAME engines_rest_kit COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_suite.sh)
set_tests_properties(engines_rest_kit PROPERTIES
  ENVIRONMENT "SKADE_BIN=$<TARGET_FILE:skade>"
  LABELS "engines;engines_rest_kit"
  PROCESSORS 2
  TIMEOUT 600)
# The kit again with its server three `skade serve` on one warehouse, sharing a key, behind nginx
# (round robin, no affinity; ../python/balanced_serve.py, as engines_python_balanced): every call
# may land on any server, and every server must answer some. About 25 s; skipped (77) without
# nginx or the Python interop virtualenv.
add_test(NAME engines_rest_kit_balanced COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_suite.sh)
set_tests_properties(engines_rest_kit_balanced PROPERTIES
  ENVIRONMENT "SKADE_BIN=$<TARGET_FILE:skade>;SKADE_BALANCED=1"
  LABELS "engines;engines_rest_kit;engines_balanced;engines_rest_kit_balanced"
  PROCESSORS 2
  SKIP_RETURN_CODE 77
  TIMEOUT 600)
