# Runs one libFuzzer binary for a bounded time from a fresh seed corpus (called by the CTest
# that tandem_fuzzer() registers):
#   cmake -DFUZZER=bin -DNAME=n -DCORPUS=dir -DSECONDS=20 [-DSEEDER=tool -DSEEDER_ARGS=a|b]
#         [-DSEED_FILES=f|g] [-DFUZZ_ARGS=-x=1|-y=2] -P run_fuzzer.cmake
# Fails if a seed file is missing, the seeder fails, or the fuzzer finds a crash, leak, UB or
# a broken property; the reproducer is left in NAME_artifacts beside the corpus.
foreach(list SEEDER_ARGS SEED_FILES FUZZ_ARGS)
  string(REPLACE "|" ";" ${list} "${${list}}")
endforeach()
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
foreach(file ${SEED_FILES})
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "seed file missing: ${file} (set TANDEM_SHARED)")
  endif()
  file(COPY ${file} DESTINATION ${CORPUS})
endforeach()
if(SEEDER)
  execute_process(COMMAND ${SEEDER} ${CORPUS} ${SEEDER_ARGS} RESULT_VARIABLE seeded)
  if(NOT seeded EQUAL 0)
    message(FATAL_ERROR "${NAME}: seeder failed: ${seeded}")
  endif()
endif()
get_filename_component(artifacts ${CORPUS}/../${NAME}_artifacts ABSOLUTE)
file(MAKE_DIRECTORY ${artifacts})
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${artifacts}/ ${FUZZ_ARGS} ${CORPUS}
  RESULT_VARIABLE fuzzed)
if(NOT fuzzed EQUAL 0)
  message(FATAL_ERROR "${NAME} failed (${fuzzed}); reproducer in ${artifacts}")
endif()
