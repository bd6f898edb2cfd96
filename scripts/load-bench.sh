#!/usr/bin/env bash
# Opening big volumes and playing time series on a GPU machine, with the disk's and PCIe's
# bandwidths measured in the same run (docs/PERFORMANCE.md, "Loading and time series").
#
#   1. PCIe: host to device from pinned memory, into linear memory and into a 3D array
#      (tests/render/load_bench --pcie).
#   2. Generates 8 GiB (2048^3) and 16 GiB (2048x2048x4096) uint8 raw volumes on this machine's
#      disk (smooth 3-D waves, so that isovalue 128 draws surfaces everywhere), and time series of
#      256^3 and 512^3 uint8 steps (the wave moving along x).
#   3. The disk: the 8 GiB file read by dd with O_DIRECT (the disk's own rate) when the page cache
#      can be dropped (root on this machine; nothing else is tried), and through the page cache.
#   4. The data module's read of the file from the page cache on several threads and on one
#      (load_bench --read), and where a streamed load's time goes (load_bench --stream: the read
#      alone, with the copies into pinned staging, with the DMA into linear memory or a 3D array;
#      into fresh and into recycled memory).
#   5. inkray --headless on each volume, from the page cache: the read (streamed to the GPU while
#      it runs), the volume ready with its statistics, the first frame, host memory; then the
#      8 GiB one again from disk when the cache can be dropped.
#   6. inkray --headless on each time series from the page cache: steps/s and the bound.
# Targets (issue): 8 GiB to the first frame <= 2 s, 16 GiB <= 4 s; 256^3 >= 200 steps/s,
# 512^3 >= 60 steps/s.
#
# Usage: scripts/load-bench.sh [--quick]   (--quick: 1 GiB and 2 GiB volumes, shorter series)
# Environment: OUT (results, default ./out: load-summary.txt and load-logs.tar.gz), INKRAY_BUILD_DIR
#   (default ./build-gpu; built here when it has no inkray), INKRAY_CUDA_ARCH (default 90),
#   LOAD_BENCH_DIR (where the files go, default ./load-bench-data: on the disk, not in /tmp, which
#   may be memory), KEEP_DATA=1 keeps the files.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/out}
mkdir -p "$out"
logs=$(mktemp -d)
data=${LOAD_BENCH_DIR:-$root/load-bench-data}
summary=()
S() { summary+=("$*"); echo "$*"; }
finish() {
  printf '%s\n' "== load-bench summary ==" "${summary[@]}" | tee "$out/load-summary.txt"
  tar -czf "$out/load-logs.tar.gz" -C "$logs" . 2>/dev/null
  [[ ${KEEP_DATA:-} == 1 ]] || rm -rf "$data"
}
trap finish EXIT
quick=0
[[ ${1:-} == --quick ]] && quick=1

build=${INKRAY_BUILD_DIR:-$root/build-gpu}
if [[ ! -x $build/inkray || ! -x $build/tests/render/load_bench ]]; then
  args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${INKRAY_CUDA_ARCH:-90}"
        -DINKRAY_WINDOW=OFF)
  [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1 && args+=(-G Ninja)
  if ! { cmake "${args[@]}" && cmake --build "$build" -j "$(nproc)" --target inkray load_bench; } >"$logs/build.log" 2>&1; then
    tail -30 "$logs/build.log"
    S "build: FAILED (build.log)"
    exit 1
  fi
fi
inkray=$build/inkray
bench=$build/tests/render/load_bench
mkdir -p "$data"
S "gpu: $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>/dev/null)"
S "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB memory"
S "data on: $(df -h "$data" | awk 'NR==2{print $1" ("$2", "$4" free)"}')"

# ---- 1. PCIe -----------------------------------------------------------------------------------
"$bench" --pcie 2048 >"$logs/pcie.txt" 2>&1
S "pcie: $(tr '\n' ' ' <"$logs/pcie.txt")"

# ---- 2. Files ------------------------------------------------------------------------------------
if ((quick)); then big=(2048x2048x256 2048x2048x512); steps256=60; steps512=24; else big=(2048x2048x2048 2048x2048x4096); steps256=200; steps512=120; fi
python3 - "$data" "$quick" "$steps256" "$steps512" "${big[@]}" >"$logs/generate.txt" 2>&1 <<'PY'
import os, sys, time
import numpy as np
data, quick, s256, s512 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = time.time()
def waves(nx, ny, z0, nz, shift=0):
    x = np.sin((np.arange(nx) + shift) * (2 * np.pi / 97.0)).astype(np.float32)
    y = np.sin(np.arange(ny) * (2 * np.pi / 89.0)).astype(np.float32)
    z = np.sin(np.arange(z0, z0 + nz) * (2 * np.pi / 83.0)).astype(np.float32)
    v = 128.0 + 110.0 * (z[:, None, None] * (y[None, :, None] * x[None, None, :]))
    return v.astype(np.uint8)
for dims in sys.argv[5:]:
    nx, ny, nz = map(int, dims.split("x"))
    path = os.path.join(data, f"waves_{dims}_uint8.raw")
    with open(path, "wb") as f:
        for z0 in range(0, nz, 64):
            f.write(waves(nx, ny, z0, min(64, nz - z0)).tobytes())
    print(path, os.path.getsize(path), f"{time.time() - t0:.1f} s")
for n, count in ((256, s256), (512, s512)):
    d = os.path.join(data, f"series{n}")
    os.makedirs(d, exist_ok=True)
    base = waves(n, n, 0, n)
    for k in range(count):
        np.roll(base, 2 * k, axis=2).tofile(os.path.join(d, f"s_{k:04d}_{n}x{n}x{n}_uint8.raw"))
    print(d, count, f"{time.time() - t0:.1f} s")
PY
if [[ $? -ne 0 ]]; then
  tail -5 "$logs/generate.txt"
  S "generate: FAILED (generate.txt)"
  exit 1
fi
vol8=$data/waves_${big[0]}_uint8.raw
vol16=$data/waves_${big[1]}_uint8.raw
S "files: $(ls -l "$vol8" "$vol16" | awk '{printf "%s %.2f GiB; ", $NF, $5/2^30}' | sed 's#[^ ]*/##g')"

# ---- 3. The disk -------------------------------------------------------------------------------------
can_drop=0
sync
if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then can_drop=1; fi
if ((can_drop)); then
  dd if="$vol8" of=/dev/null bs=16M iflag=direct 2>"$logs/dd-direct.txt"
  S "disk (dd, O_DIRECT, cold): $(tail -1 "$logs/dd-direct.txt" | sed 's/.*, //')"
else
  S "disk: the page cache cannot be dropped here (not root, or not allowed): cold reads not measured"
fi
cat "$vol8" >/dev/null
dd if="$vol8" of=/dev/null bs=16M 2>"$logs/dd-cached.txt"
S "page cache (dd, one thread): $(tail -1 "$logs/dd-cached.txt" | sed 's/.*, //')"

# ---- 4. The data module's read ---------------------------------------------------------------------
"$bench" --read "$vol8" >"$logs/read.txt" 2>&1
S "read (data module, page cache): $(grep -E '^read_(parallel|one)' "$logs/read.txt" | tr '\n' ' ')"
"$bench" --stream "$vol8" --runs 1 >"$logs/stream.txt" 2>&1
S "streamed load stages (8 GiB, GB/s): $(sed 's/ GB\/s//' "$logs/stream.txt" | tr '\n' ' ')"

# ---- 5. Volumes to the first frame -------------------------------------------------------------------
open_run() { # name file [env...]
  local name=$1 file=$2
  shift 2
  env "$@" "$inkray" --headless --device gpu --frames 3 --warmup 0 --no-stages --size 1024x1024 --iso 128 "$file" \
    >"$logs/open-$name.txt" 2>&1
  local rc=$?
  S "open $name: rc $rc; $(grep -E '^inkray: opened' "$logs/open-$name.txt" | sed 's/^inkray: opened [^:]*: //'); $(grep -E '^inkray: first frame' "$logs/open-$name.txt" | sed 's/^inkray: //')"
}
open_run 8GiB-cached "$vol8"
open_run 8GiB-cached-again "$vol8"
cat "$vol16" >/dev/null
open_run 16GiB-cached "$vol16"
open_run 16GiB-cached-again "$vol16"
if ((can_drop)); then
  sync && echo 3 >/proc/sys/vm/drop_caches
  open_run 8GiB-disk-auto "$vol8"
  sync && echo 3 >/proc/sys/vm/drop_caches
  open_run 8GiB-disk-buffered "$vol8" INKRAY_IO=buffered
fi
[[ ${KEEP_DATA:-} == 1 ]] || rm -f "$vol8" "$vol16"

# ---- 6. Time series ------------------------------------------------------------------------------------
series_run() { # n
  local n=$1 dir=$data/series$1
  cat "$dir"/*.raw >/dev/null
  "$inkray" --headless --device gpu --warmup 3 --no-stages --size 1024x1024 --iso 128 "$dir" >"$logs/series-$n.txt" 2>&1
  local rc=$?
  S "series ${n}^3: rc $rc; $(grep -E '^series:' "$logs/series-$n.txt" | sed 's/^series: //')"
  S "  $(grep -E '^medians' "$logs/series-$n.txt")"
  S "  $(grep -E '^bound' "$logs/series-$n.txt")"
}
series_run 256
series_run 512
