# Interface target carrying the project's warning flags and determinism flags.
add_library(stepsim_warnings INTERFACE)
add_library(stepsim::warnings ALIAS stepsim_warnings)
target_compile_options(stepsim_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -ffp-contract=off)
if(STEPSIM_WERROR)
  target_compile_options(stepsim_warnings INTERFACE -Werror)
endif()
if(STEPSIM_FUZZ)
  target_compile_options(stepsim_warnings INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_link_options(stepsim_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(STEPSIM_SANITIZE)
  target_compile_options(stepsim_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(stepsim_warnings INTERFACE -fsanitize=address,undefined)
endif()

# stepsim_library(NAME SOURCES... DEPS ...) declares stepsim::NAME from NAME/src and NAME/include.
function(stepsim_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(stepsim_${name} STATIC ${ARG_SOURCES})
  add_library(stepsim::${name} ALIAS stepsim_${name})
  target_include_directories(stepsim_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_features(stepsim_${name} PUBLIC cxx_std_20)
  target_link_libraries(stepsim_${name} PUBLIC ${ARG_DEPS} PRIVATE stepsim::warnings ${ARG_PRIVATE_DEPS})
endfunction()

# stepsim_test(NAME SOURCES... DEPS ...) declares one doctest executable; ctest runs each case on its own.
function(stepsim_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} stepsim_test_main stepsim::warnings doctest::doctest)
  target_compile_definitions(${name} PRIVATE STEPSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}" STEPSIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  doctest_discover_tests(${name} ADD_LABELS 0)
endfunction()

# stepsim_plugin(TARGET OUTPUT_NAME N LOADER L DEFINE M SOURCES... LIBS...) declares the shared object
# lib<N>.so that library L loads with dlopen: built next to the stepsim executable (which finds it
# there), with only its entry point visible, and its build-tree path in L's macro M (for programs
# outside app/: tests, benchmarks).
function(stepsim_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME;LOADER;DEFINE" "SOURCES;LIBS" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${ARG_OUTPUT_NAME}
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/app
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} stepsim::warnings)
  if(NOT STEPSIM_SANITIZE AND NOT STEPSIM_FUZZ)
    target_link_options(${target} PRIVATE LINKER:--no-undefined)
  endif()
  add_dependencies(${ARG_LOADER} ${target})
  target_compile_definitions(${ARG_LOADER} PRIVATE ${ARG_DEFINE}="$<TARGET_FILE:${target}>")
endfunction()

# stepsim_static_libstdcxx(TARGET) links libstdc++ into an executable as a static library: its
# start-up then does not relocate the shared libstdc++ (a few thousand symbol lookups; 1.3 ms of
# CPU of the ~10 ms that an analytic `stepsim run` takes on the reference 2-core machine). The
# plugins (SimGrid, MPI) keep the shared libstdc++, and no exception crosses their entry points.
# Off in sanitizer and fuzzer builds, whose runtimes replace the allocation functions.
function(stepsim_static_libstdcxx target)
  if(STEPSIM_STATIC_LIBSTDCXX AND NOT STEPSIM_SANITIZE AND NOT STEPSIM_FUZZ)
    target_link_options(${target} PRIVATE -static-libstdc++)
  endif()
endfunction()
