# The skade Python package (python/) over the C interface (libskade.so, target skade_c): round
# trips with pyarrow, pandas and Polars, bad input, commits of other processes, Ctrl-C, the
# built wheel. pyarrow, pandas, Polars and pytest are pinned in requirements.txt and installed
# by scripts/setup_interop.sh. Two ctest cases so that `ctest -j2` runs them side by side.
set(SKADE_PYPKG_DIR ${CMAKE_CURRENT_LIST_DIR})
foreach(part IN ITEMS data lake)
  if(part STREQUAL "data")
    set(files test_roundtrip.py test_writes.py)
  else()
    set(files test_errors.py test_commits.py test_package.py)
  endif()
  add_test(NAME engines_pypkg_${part}
           COMMAND ${CMAKE_COMMAND} -E env SKADE_BIN=$<TARGET_FILE:skade> SKADE_LIBRARY=$<TARGET_FILE:skade_c>
                   ${SKADE_PYPKG_DIR}/run_pytest.sh ${files})
  set_tests_properties(engines_pypkg_${part} PROPERTIES
    LABELS "engines;engines_pypkg"
    TIMEOUT 300)
endforeach()
