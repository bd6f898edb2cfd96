#!/usr/bin/env bash
# Distributed (sort-last, MPI) frame times on one machine: the same volume and views over 1, 2
# and 4 ranks (all ranks on GPU rank % devices, so on a one-GPU machine they share it), and a
# table of the frame time and its phases (render, gather, composite) per rank count.
# Usage: scripts/dist-bench.sh [RANKS...]            (default: 1 2 4)
# Needs a built tree with MPI (libopenmpi-dev at configure time) and mpirun on PATH.
# Environment: INKRAY_BUILD_DIR (default ./build-gpu, else ./build), OUT (logs and CSVs, default
#   ./out/dist-bench), VOLUME (default builtin:fractal:2048: 8 GiB of uint8, each rank generating
#   only its brick), ISO (default: the builtin's isovalue), SIZE (default 1024x1024), FRAMES
#   (default 50), DEVICE (gpu or cpu, default gpu), PIPELINE (multi or single, default single),
#   METHOD (default ink-compact), MPIRUN_ARGS (more mpirun arguments, e.g. a hostfile).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-}
if [[ -z $build ]]; then
  build=$root/build-gpu
  [[ -x $build/inkray ]] || build=$root/build
fi
inkray=$build/inkray
out=${OUT:-$root/out}/dist-bench
volume=${VOLUME:-builtin:fractal:2048}
size=${SIZE:-1024x1024}
frames=${FRAMES:-50}
device=${DEVICE:-gpu}
pipeline=${PIPELINE:-single}
method=${METHOD:-ink-compact}
ranks_list=("$@")
((${#ranks_list[@]})) || ranks_list=(1 2 4)

[[ -x $inkray ]] || { echo "dist-bench: no $inkray: build first (scripts/setup.sh or scripts/gpu-check.sh)"; exit 2; }
command -v mpirun >/dev/null || { echo "dist-bench: mpirun not found: install openmpi-bin"; exit 2; }
mkdir -p "$out"

# Root (CI, containers) needs OpenMPI's explicit consent; --bind-to none leaves each rank all
# cores (OpenMPI binds one rank to one core by default, starving the brick generation and the
# host threads); --oversubscribe allows more ranks than cores or slots.
mpi=(mpirun --oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
# shellcheck disable=SC2206
mpi+=(${MPIRUN_ARGS:-})
iso=()
[[ -n ${ISO:-} ]] && iso=(--iso "$ISO")

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$out/gpu.txt" || true
echo "dist-bench: $volume, $size, $frames frames, $device, $pipeline pipeline, ranks: ${ranks_list[*]}"
rows=()
for n in "${ranks_list[@]}"; do
  log=$out/ranks$n.log
  echo "== $n rank(s): $log"
  t0=$(date +%s)
  if ! "${mpi[@]}" -np "$n" "$inkray" --headless --device "$device" --pipeline "$pipeline" --method "$method" \
       --size "$size" --frames "$frames" --warmup 5 --orbit 8 --quiet "${iso[@]}" \
       --csv "$out/ranks$n.csv" --png "$out/ranks$n.png" "$volume" >"$log" 2>&1; then
    tail -5 "$log"
    rows+=("$(printf '%-10s %6s FAILED (see %s)' - "$n" "$log")")
    continue
  fi
  # The summary row: isovalue ranks mean median p95 fps render gather composite.
  row=$(awk '/^isovalue +ranks/ {getline; print; exit}' "$log")
  rows+=("$(printf '%s   (run: %ss wall, loading included)' "$row" "$(( $(date +%s) - t0 ))")")
done
echo
echo "frame time and phases in ms (means over $frames frames; render and gather: slowest rank)"
printf '%-10s %6s %9s %9s %9s %9s %9s %9s %11s\n' isovalue ranks mean median p95 "FPS mean" render gather composite
printf '%s\n' "${rows[@]}"
