# Runs one fuzzer for a bounded time from a fresh seed corpus (called by CTest):
#   cmake -DSEEDER=... -DFUZZER=... -DFORMAT=gguf -DCORPUS=dir -DSECONDS=20
#         -DSHARED_FILES=a;b -P run_fuzzer.cmake
# Fails if a shared file is missing, or if the fuzzer finds a crash, leak or UB.
foreach(file ${SHARED_FILES})
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "shared test file missing: ${file} (set TANDEM_SHARED)")
  endif()
endforeach()
file(REMOVE_RECURSE ${CORPUS})
execute_process(COMMAND ${SEEDER} ${FORMAT} ${CORPUS} ${SHARED_FILES} RESULT_VARIABLE seeded)
if(NOT seeded EQUAL 0)
  message(FATAL_ERROR "make_seed_corpus failed: ${seeded}")
endif()
get_filename_component(artifacts ${CORPUS}/../${FORMAT}_artifacts ABSOLUTE)
file(MAKE_DIRECTORY ${artifacts})
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -max_len=65536 -rss_limit_mb=2048
          -print_final_stats=1 -artifact_prefix=${artifacts}/ ${CORPUS}
  RESULT_VARIABLE fuzzed)
if(NOT fuzzed EQUAL 0)
  message(FATAL_ERROR "${FORMAT} fuzzer failed (${fuzzed}); reproducer in ${artifacts}")
endif()
