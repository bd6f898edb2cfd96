# Runs the header fuzzer on a copy of the seed corpus (new inputs go to the copy, never to the
# source tree). Variables: FUZZER, CORPUS (seed folder), WORK (scratch folder), SECONDS.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB seeds "${CORPUS}/*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -max_len=8192 -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 "-artifact_prefix=${WORK}/artifacts/" "${WORK}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the header fuzzer failed (exit ${rc}); the input that did it is in ${WORK}/artifacts")
endif()
