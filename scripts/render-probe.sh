#!/usr/bin/env bash
# Measurements behind docs/render.md's analysis of the renderers, on the GPU at hand (needs ncu):
# SIMD efficiency (threads active per warp instruction), registers, occupancy and throughput of
# the single kernel, the plain caster and the multi pipeline's stage kernels, for one view of
# builtin:fractal:256 at 1024x1024.
# Usage: scripts/render-probe.sh [OUT_FILE]   Environment: INKRAY_BUILD_DIR (default ./build)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
out=${1:-/dev/stdout}
metrics=smsp__thread_inst_executed_per_inst_executed.ratio,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__grid_size
ncu --metrics "$metrics" -k 'regex:single_kernel|plain_caster|walk_|traverse_kernel|intersect_kernel' \
  --csv --page raw "$build/tests/render/render_bench" builtin:fractal:256 127.5 --frames 1 --warmup 0 --views 1 \
  --only plain,single,multi/ink-collate,paper/ink-collate >"$out" 2>&1
