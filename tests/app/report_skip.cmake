# Read by ctest after the app tests are discovered: the headless-browser test of `stepsim report`
# counts as skipped, not passed, when it printed that chromium is missing.
set(_stepsim_browser_test "the HTML report renders in a headless browser")
list(FIND app_tests_TESTS "${_stepsim_browser_test}" _stepsim_browser_index)
if(NOT _stepsim_browser_index EQUAL -1)
  set_tests_properties("${_stepsim_browser_test}" PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: chromium not installed")
endif()
