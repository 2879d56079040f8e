# The Python interop suite: PyIceberg (REST catalog and SqlCatalog on catalog.db), the ADBC Flight
# SQL driver with pyarrow, schemathesis fuzzing of the REST API, and pyarrow's Flight client
# across servers sharing a key, each against `skade serve` on loopback; and three servers on
# PostgreSQL and s3rver behind nginx, one killed under load (scaleout), and the PyIceberg REST and
# ADBC tests through nginx (balanced). The clients are pinned in requirements.txt and installed by scripts/setup_interop.sh.
# Six ctest cases so that `ctest -j2` runs them side by side.
set(SKADE_PY_INTEROP_DIR ${CMAKE_CURRENT_LIST_DIR})
foreach(part IN ITEMS pyiceberg adbc schemathesis shared_key scaleout)
  if(part STREQUAL "pyiceberg")
    # test_remote_signing.py is not run here: PyIceberg 0.12 registers its remote signer on the
    # s3fs client of the moment, and s3fs makes a new client (without it) once its connections
    # all closed, so a later request goes out unsigned — intermittently (2 of 3 runs). Run it by
    # hand (run_pytest.sh test_remote_signing.py); skade's own client and raw signed requests are
    # tested through the verifying proxy in tests/cli/object_store_cli_test.cc.
    set(files test_pyiceberg_rest.py test_pyiceberg_sqlcatalog.py)
  else()
    set(files test_${part}.py)
  endif()
  add_test(NAME engines_python_${part}
           COMMAND ${CMAKE_COMMAND} -E env SKADE_BIN=$<TARGET_FILE:skade>
                   ${SKADE_PY_INTEROP_DIR}/run_pytest.sh ${files})
  set_tests_properties(engines_python_${part} PROPERTIES
    LABELS "engines;engines_python;engines_python_${part}"
    TIMEOUT 300)
endforeach()
# The PyIceberg REST and ADBC tests again, each server of theirs three behind nginx sharing a key
# (conftest.py, SKADE_PY_BALANCED): every call may land on any server.
add_test(NAME engines_python_balanced
         COMMAND ${CMAKE_COMMAND} -E env SKADE_BIN=$<TARGET_FILE:skade> SKADE_PY_BALANCED=1
                 ${SKADE_PY_INTEROP_DIR}/run_pytest.sh test_pyiceberg_rest.py test_adbc.py)
set_tests_properties(engines_python_balanced PROPERTIES
  LABELS "engines;engines_python;engines_balanced;engines_python_balanced"
  TIMEOUT 300)
