# Helpers that keep every folder's CMakeLists.txt short and alike.
include(GoogleTest)

# tandem_library(NAME SRCS a.cc ... DEPS x y ...)
# A static library rooted at the repository, so includes read "core/base/foo.h".
function(tandem_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  if(ARG_SRCS)
    add_library(${name} STATIC ${ARG_SRCS})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/gen)
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/gen)
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# tandem_test(NAME SRCS foo_test.cc DEPS ... [LABEL unit|integration|e2e] [TIMEOUT s])
# One gtest binary; each TEST becomes a CTest test carrying the label.
function(tandem_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SRCS;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SRCS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} tandem_testing GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
               ENVIRONMENT "TANDEM_BIN=${PROJECT_BINARY_DIR}/bin")
  # (One variable only: gtest_discover_tests splits a list. Tests find the shared folder
  # through $TANDEM_SHARED when set, else the path compiled into tandem_testing.)
endfunction()

# tandem_binary(NAME SRCS main.cc DEPS ...): lands in build/bin/.
function(tandem_binary name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

set(TANDEM_FUZZ_SECONDS 20 CACHE STRING "How long each fuzzer's CTest runs")

# tandem_fuzzer(NAME SRCS a.cc ... DEPS x ... [SEEDER tool] [SEEDER_ARGS a ...]
#               [SEED_FILES f ...] [FUZZ_ARGS -flag=v ...] [SECONDS s])
# TANDEM_FUZZ builds only (clang): a libFuzzer binary NAME and a CTest NAME_smoke that fills a
# fresh corpus in the build dir (SEED_FILES copied, plus whatever `SEEDER OUT_DIR SEEDER_ARGS`
# writes) and fuzzes for SECONDS (default TANDEM_FUZZ_SECONDS). Shared files are read at run
# time; TANDEM_SHARED is passed to the fuzzer in its environment.
function(tandem_fuzzer name)
  cmake_parse_arguments(ARG "" "SEEDER;SECONDS" "SRCS;DEPS;SEEDER_ARGS;SEED_FILES;FUZZ_ARGS"
                        ${ARGN})
  if(NOT TANDEM_FUZZ)
    return()
  endif()
  if(NOT ARG_SECONDS)
    set(ARG_SECONDS ${TANDEM_FUZZ_SECONDS})
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set(seeder_command "")
  if(ARG_SEEDER)
    set(seeder_command $<TARGET_FILE:${ARG_SEEDER}>)
  endif()
  # Lists cross the -D boundary joined with '|' (CMake would split them at ';').
  string(REPLACE ";" "|" seeder_args "${ARG_SEEDER_ARGS}")
  string(REPLACE ";" "|" seed_files "${ARG_SEED_FILES}")
  string(REPLACE ";" "|" fuzz_args "${ARG_FUZZ_ARGS}")
  add_test(NAME ${name}_smoke
    COMMAND ${CMAKE_COMMAND}
      -DFUZZER=$<TARGET_FILE:${name}> -DNAME=${name}
      -DCORPUS=${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus -DSECONDS=${ARG_SECONDS}
      "-DSEEDER=${seeder_command}" "-DSEEDER_ARGS=${seeder_args}"
      "-DSEED_FILES=${seed_files}" "-DFUZZ_ARGS=${fuzz_args}"
      -P ${PROJECT_SOURCE_DIR}/cmake/run_fuzzer.cmake)
  math(EXPR timeout "${ARG_SECONDS} + 120")
  set_tests_properties(${name}_smoke PROPERTIES LABELS unit TIMEOUT ${timeout}
    ENVIRONMENT "TANDEM_SHARED=${TANDEM_SHARED}")
endfunction()
