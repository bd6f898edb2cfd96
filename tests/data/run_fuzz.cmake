# Runs a fuzzer on a copy of its seed corpus (new inputs go to the copy, never to the source
# tree). Variables: FUZZER, CORPUS (seed folder), WORK (scratch folder), SECONDS, MAX_LEN
# (longest input in bytes, default 8192) and MALLOC_LIMIT_MB (the largest single allocation an
# input may make, default 2048: more from a fuzzed input of a few KB is a defect), RUNS (inputs
# to run, default unbounded: SECONDS bounds it), SEED, and ASAN_QUARANTINE_MB (AddressSanitizer's
# quarantine of freed memory, default its own 256 MB: a fuzzer that forks runs faster with less,
# since a fork copies the page tables of all of it).
#
# CTest runs each fuzzer with a fixed SEED and RUNS, so that a run is the same run on every
# machine: a test that passed here passes in CI, and a finding there is reproducible. New inputs
# are what the long runs are for (docs/reliability.md); INKRAY_FUZZ_SEED in the environment
# replaces the seed (0: a random one) to explore from CTest too.
if(DEFINED ENV{INKRAY_FUZZ_SEED})
  set(SEED $ENV{INKRAY_FUZZ_SEED})
endif()
if(NOT SEED)
  set(SEED 0)
endif()
if(NOT RUNS)
  set(RUNS -1)
endif()
if(NOT MAX_LEN)
  set(MAX_LEN 8192)
endif()
if(NOT MALLOC_LIMIT_MB)
  set(MALLOC_LIMIT_MB 2048)
endif()
if(ASAN_QUARANTINE_MB AND NOT DEFINED ENV{ASAN_OPTIONS})
  set(ENV{ASAN_OPTIONS} "quarantine_size_mb=${ASAN_QUARANTINE_MB}")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB seeds "${CORPUS}/*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -seed=${SEED} -runs=${RUNS} -max_total_time=${SECONDS} -max_len=${MAX_LEN} -timeout=10
          -rss_limit_mb=2048 -malloc_limit_mb=${MALLOC_LIMIT_MB}
          -print_final_stats=1 "-artifact_prefix=${WORK}/artifacts/" "${WORK}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}, seed ${SEED}); the input that did it is in ${WORK}/artifacts")
endif()
