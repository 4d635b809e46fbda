# Read by ctest after the app tests are discovered: the headless-browser test of `stepsim report`
# counts as skipped, not passed, when it printed that chromium is missing or renders no page at all
# (and so do the pandas test without python3-pandas and the mpirun test in a build without MPI).
set(_stepsim_browser_test "the HTML report renders in a headless browser")
list(FIND app_tests_TESTS "${_stepsim_browser_test}" _stepsim_browser_index)
if(NOT _stepsim_browser_index EQUAL -1)
  set_tests_properties("${_stepsim_browser_test}" PROPERTIES SKIP_REGULAR_EXPRESSION
                      "skipped: chromium (not installed|does not render a one-line page here)")
endif()
set(_stepsim_pandas_test "pandas.read_csv(path) with no options gives numbers, booleans and strings")
list(FIND app_tests_TESTS "${_stepsim_pandas_test}" _stepsim_pandas_index)
if(NOT _stepsim_pandas_index EQUAL -1)
  set_tests_properties("${_stepsim_pandas_test}" PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: python3-pandas not installed")
endif()
set(_stepsim_mpi_test "stepsim sweep --mpi under mpirun --oversubscribe -n 3: the bytes of sweep -j 3")
list(FIND app_tests_TESTS "${_stepsim_mpi_test}" _stepsim_mpi_index)
if(NOT _stepsim_mpi_index EQUAL -1)
  set_tests_properties("${_stepsim_mpi_test}" PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: stepsim built without MPI")
endif()
