# Read by ctest after the report tests are discovered: the headless-browser checks count as
# skipped, not passed, when they printed that chromium is missing.
foreach(_stepsim_test IN LISTS report_tests_TESTS)
  if(_stepsim_test MATCHES "^browser: ")
    set_tests_properties("${_stepsim_test}" PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: chromium not installed")
  endif()
endforeach()
