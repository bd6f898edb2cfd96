#!/usr/bin/env bash
# Frame times of two builds of inkray on the GPU at hand, interleaved in one run so that clock
# and thermal drift fall on both alike: for each repetition and scene, render_bench of the
# "before" build, then of the "after" build (default exact refinement, then --texture-refine).
# Prints the median over repetitions of each renderer's mean frame ms and after/before ratios
# (below 1: faster after).
#
# Usage: scripts/speed-vs.sh BEFORE_BUILD AFTER_BUILD [--reps N] [--only LABELS] [--frames N]
#   LABELS: render_bench variant labels (default plain,single,multi/ink-collate,paper/ink-collate)
set -uo pipefail
before=${1:?usage: speed-vs.sh BEFORE_BUILD AFTER_BUILD [--reps N] [--only LABELS]}
after=${2:?usage: speed-vs.sh BEFORE_BUILD AFTER_BUILD [--reps N] [--only LABELS]}
shift 2
reps=3 only=plain,single,multi/ink-collate,paper/ink-collate frames=40
while (($#)); do
  case $1 in
    --reps) reps=$2; shift ;;
    --only) only=$2; shift ;;
    --frames) frames=$2; shift ;;
    *) echo "speed-vs: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
for b in "$before" "$after"; do
  [[ -x $b/tests/render/render_bench ]] || { echo "speed-vs: $b/tests/render/render_bench is not built" >&2; exit 2; }
done
# name|volume|size|distance
scenes=("f256-d1|builtin:fractal:256|1024x1024|1" "f512-d0.7|builtin:fractal:512|1024x1024|0.7"
        "f512-4k-d0.7|builtin:fractal:512|3840x2160|0.7")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < reps; r++)); do
  for sc in "${scenes[@]}"; do
    IFS='|' read -r name vol size dist <<<"$sc"
    common=("$vol" 127.5 --size "$size" --distance "$dist" --views 8 --frames "$frames" --warmup 5 --only "$only")
    "$before/tests/render/render_bench" "${common[@]}" 2>&1 | grep -v '^#' | awk -v s="$name" -v k=before '{print s, k, $1, $2}' >>"$tmp/rows"
    "$after/tests/render/render_bench" "${common[@]}" 2>&1 | grep -v '^#' | awk -v s="$name" -v k=exact '{print s, k, $1, $2}' >>"$tmp/rows"
    "$after/tests/render/render_bench" "${common[@]}" --texture-refine 2>&1 | grep -v '^#' | awk -v s="$name" -v k=texture '{print s, k, $1, $2}' >>"$tmp/rows"
  done
done
# Median over the repetitions of each (scene, renderer, build): sorted by value within each
# group, the middle row of the group.
grep -v ' variant ' "$tmp/rows" | sort -k1,1 -k3,3 -k2,2 -k4,4g | awk -v reps="$reps" '
  { key = $1 " " $3 " " $2; n[key]++; if (n[key] == int((reps + 1) / 2)) med[key] = $4; seen[$1 " " $3] = 1 }
  END {
    printf "%-14s %-22s %9s %9s %9s %8s %8s\n", "scene", "renderer", "before", "exact", "texture", "ex/bef", "tx/bef"
    for (k in seen) {
      b = med[k " before"] + 0; e = med[k " exact"] + 0; t = med[k " texture"] + 0
      split(k, q, " ")
      re = 0; rt = 0; if (b > 0) { re = e / b; rt = t / b }
      printf "%-14s %-22s %9.4f %9.4f %9.4f %8.3f %8.3f\n", q[1], q[2], b, e, t, re, rt
    }
  }' | sort
