#!/usr/bin/env bash
# One call on a GPU machine: build everything, run the GPU test suite (and the CPU tests), run a
# short benchmark (compaction, extraction, headless frames of every pipeline, the render scenes' quick set),
# and print a short summary last. Results go to $OUT (or ./out): at most six
# files (summary.txt, logs.tar.gz with every log, compact-bench.csv, frames.csv, last.png), since a
# GPU machine hands back only a few. The tests use the datasets in tests/data/real.
# Usage: scripts/gpu-check.sh [--no-bench]
# Environment: OUT (results), INKRAY_BUILD_DIR (default ./build-gpu), INKRAY_CUDA_ARCH (default 90),
#   INKRAY_SHARED_DATA (optional extra datasets, default ../shared/data),
#   INKRAY_CMAKE_ARGS (more configure arguments),
#   INKRAY_STRESS_SEED (the renderer stress run's seed, default 2024), INKRAY_STRESS_FRAMES (10000).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/out}
mkdir -p "$out"
logs=$(mktemp -d)
trap 'tar -czf "$out/logs.tar.gz" -C "$logs" . && rm -rf "$logs"' EXIT
build=${INKRAY_BUILD_DIR:-$root/build-gpu}
summary=()
note() { summary+=("$*"); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$logs/gpu.txt"
t0=$(date +%s)
args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${INKRAY_CUDA_ARCH:-90}"
      -DINKRAY_WINDOW=OFF)
[[ -n ${INKRAY_SHARED_DATA:-} ]] && args+=(-DINKRAY_SHARED_DATA="$INKRAY_SHARED_DATA")
[[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1 && args+=(-G Ninja)
# shellcheck disable=SC2206
args+=(${INKRAY_CMAKE_ARGS:-})
if cmake "${args[@]}" >"$logs/configure.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" >"$logs/build.log" 2>&1; then
  note "build: ok in $(( $(date +%s) - t0 )) s"
else
  tail -40 "$logs/build.log" "$logs/configure.log"
  note "build: FAILED (see build.log)"
  printf '%s\n' "== summary ==" "${summary[@]}" | tee "$out/summary.txt"
  exit 1
fi

ctest --test-dir "$build" --output-on-failure -L 'gpu|cpu' -E fuzz >"$logs/ctest.log" 2>&1
rc=$?
grep -E "tests passed|tests failed|\*\*\*" "$logs/ctest.log" | tail -20
note "tests: $(grep -E 'tests passed' "$logs/ctest.log" | tail -1) (rc $rc)"

# The renderer stress test with another seed than ctest's (24) and more frames; its log's last
# lines are the summary, and a failure names the seed, the frame and the command to replay it.
stress_seed=${INKRAY_STRESS_SEED:-2024}
"$build/tests/render/test_render_stress" --seed "$stress_seed" --frames "${INKRAY_STRESS_FRAMES:-10000}" \
  >"$logs/stress.log" 2>&1
stress_rc=$?
tail -8 "$logs/stress.log"
grep -m 3 -A 8 '^FAILED' "$logs/stress.log"
stress_result=$(grep -E '^stress:' "$logs/stress.log" | tail -1 | cut -d' ' -f2-)
[[ -n $stress_result ]] || stress_result=$(tail -1 "$logs/stress.log")
note "stress: seed $stress_seed, ${INKRAY_STRESS_FRAMES:-10000} frames: $stress_result (rc $stress_rc)"
((stress_rc == 0 || stress_rc == 77)) || rc=1

if [[ ${1:-} != --no-bench ]]; then
  "$build/inkray" compact-bench --quick --csv "$out/compact-bench.csv" >"$logs/compact-bench.txt" 2>&1
  note "compact-bench: rc $? ($(wc -l <"$out/compact-bench.csv" 2>/dev/null || echo 0) csv rows)"
  tail -30 "$logs/compact-bench.txt"
  "$build/tests/extract/extract_bench" --sizes 256,512 --runs 10 --csv "$logs/extract-bench.csv" --inkray "$build/inkray" \
    >"$logs/extract-bench.txt" 2>&1
  note "extract-bench: rc $?"
  tail -28 "$logs/extract-bench.txt"
  "$build/inkray" --headless --frames 50 --size 1024x1024 --method all --pipeline multi,paper,single,plain \
    --orbit 8 --csv "$out/frames.csv" --png "$out/last.png" builtin:fractal:256 >"$logs/headless.txt" 2>&1
  note "headless: rc $?"
  tail -20 "$logs/headless.txt"
  INKRAY_BUILD_DIR=$build "$root/scripts/render-scenes.sh" --quick --out "$logs/render-scenes" \
    >"$logs/render-scenes.txt" 2>&1
  note "render-scenes --quick: rc $?"
  tail -22 "$logs/render-scenes.txt"
fi
printf '%s\n' "== summary ==" "$(cat "$logs/gpu.txt")" "${summary[@]}" | tee "$out/summary.txt"
exit $rc
