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
