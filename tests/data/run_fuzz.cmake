# Runs a fuzzer on a copy of its seed corpus (new inputs go to the copy, never to the source
# tree). Variables: FUZZER, CORPUS (seed folder), WORK (scratch folder), SECONDS, MAX_LEN
# (longest input in bytes, default 8192) and MALLOC_LIMIT_MB (the largest single allocation an
# input may make, default 2048: more from a fuzzed input of a few KB is a defect).
if(NOT MAX_LEN)
  set(MAX_LEN 8192)
endif()
if(NOT MALLOC_LIMIT_MB)
  set(MALLOC_LIMIT_MB 2048)
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB seeds "${CORPUS}/*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -max_len=${MAX_LEN} -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=${MALLOC_LIMIT_MB}
          -print_final_stats=1 "-artifact_prefix=${WORK}/artifacts/" "${WORK}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); the input that did it is in ${WORK}/artifacts")
endif()
