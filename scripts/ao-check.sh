#!/usr/bin/env bash
# Ambient occlusion and shadows on a GPU machine, in one go: builds what it needs, runs the tests
# of render/secondary.cuh (CPU, GPU: every pipeline and method against each other and the CPU,
# accumulation, compute-sanitizer memcheck and racecheck), the stress test with its random
# occlusion/shadow/light frames, then the frame times of docs/render.md's targets for them:
# render_bench with --ao 8 --shadows --light 30,45 on the 512^3 fractal at 1024^2 (distance 1 and
# 0.7), 3840x2160 (distance 0.7) and the two-surface scene, and the same scenes' single kernel
# without them. Prints a summary table last; every render_bench output is kept in --out.
# --window INKRAY also opens that window-enabled inkray (scripts/window-gpu-libs.sh's bundle) on
# the 512^3 fractal at 1024x1024 with --ao 8 --vsync off, offscreen on the GPU's EGL, and prints
# how long a still view takes to reach 64 occlusion samples per pixel.
#
# Usage: scripts/ao-check.sh [--out DIR] [--no-tests] [--no-bench] [--window INKRAY]
# Environment: INKRAY_BUILD_DIR (default ./build, configured by scripts/setup.sh or cmake).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
out=$root/out/ao-check
tests=1 bench=1 window=
while (($#)); do
  case $1 in
    --window) window=${2:?--window needs a window-enabled inkray}; shift ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    *) echo "ao-check: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
[[ -f $build/CMakeCache.txt ]] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release || exit 1
cmake --build "$build" --target inkray test_render_ao test_render_ao_gpu test_render_stress render_bench || exit 1
status=0
if ((tests)); then
  ctest --test-dir "$build" -R 'test_render_ao' --output-on-failure 2>&1 | tee "$out/ctest.txt" || status=1
  # The stress test's own seed here; its lit frames are about a fifth of all.
  "$build/tests/render/test_render_stress" --seed 31 --frames 1500 2>&1 | tail -20 | tee "$out/stress.txt" || status=1
fi
if ((bench)); then
  bench_bin=$build/tests/render/render_bench
  lit=(--ao 8 --shadows --light "30,45")
  # name|volume|size|distance|more
  scenes=(
    "f512-d1|builtin:fractal:512|1024x1024|1"
    "f512-d0.7|builtin:fractal:512|1024x1024|0.7"
    "f512-4k-d0.7|builtin:fractal:512|3840x2160|0.7"
    "f512-2surf-d0.7|builtin:fractal:512|1024x1024|0.7|--surfaces 100:0.35,160:1"
  )
  for s in "${scenes[@]}"; do
    IFS='|' read -r name vol size dist more <<<"$s"
    # shellcheck disable=SC2086
    "$bench_bin" "$vol" 127.5 --size "$size" --distance "$dist" --frames 40 --warmup 5 $more "${lit[@]}" \
      >"$out/$name-lit.txt" 2>&1 || { echo "ao-check: $name (lit) failed, see $out/$name-lit.txt" >&2; status=1; }
    # shellcheck disable=SC2086
    "$bench_bin" "$vol" 127.5 --size "$size" --distance "$dist" --frames 40 --warmup 5 $more \
      --only single,independent/m8 >"$out/$name-plain.txt" 2>&1 ||
      { echo "ao-check: $name failed, see $out/$name-plain.txt" >&2; status=1; }
  done
  python3 - "$out" "${scenes[@]}" <<'PY'
import os, sys
out, scenes = sys.argv[1], [s.split('|')[0] for s in sys.argv[2:]]
def rows(path):
    r, gpu = {}, ""
    if not os.path.exists(path): return r, gpu
    for line in open(path):
        if line.startswith("# ") and not line.startswith(("# refinement", "# ambient")): gpu = line[2:].split(",")[0]
        parts = line.split("|")[0].split()
        if len(parts) >= 7 and "|" in line and not line.startswith("#") and parts[0] != "variant":
            r[parts[0]] = float(parts[1])
    return r, gpu
print("\n== AO 8 + shadows + light 30,45: mean frame ms (x the lit single kernel; above 1 = faster) ==")
for sc in scenes:
    lit, gpu = rows(os.path.join(out, sc + "-lit.txt"))
    plain, _ = rows(os.path.join(out, sc + "-plain.txt"))
    if not lit: print(f"{sc}: no figures"); continue
    single = lit.get("single", 0.0)
    others = [(v, k) for k, v in lit.items() if k != "single"]
    if not others: print(f"{sc}: only the single kernel's figure (see {sc}-lit.txt)"); continue
    best = min(others)
    print(f"\n{sc} on {gpu}: single kernel without AO {plain.get('single', 0):.3f} ms, independent/m8 without AO "
          f"{plain.get('independent/m8', 0):.3f} ms; with AO + shadows:")
    for k, v in sorted(lit.items(), key=lambda kv: kv[1]):
        print(f"  {k:34s} {v:8.3f} ms  x{single / v if v else 0:5.2f}")
    print(f"  best InK pipeline: {best[1]} x{single / best[0]:.2f} the single kernel; fastest overall "
          f"{min(lit.values()):.3f} ms")
PY
fi
if [[ -n $window ]]; then
  export SDL_VIDEODRIVER=offscreen
  for f in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
    [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -f $f ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$f
  done
  echo "3 quit" >"$out/quit.txt"
  timeout 300 "$window" --device gpu --window 1024x1024 --size 1024x1024 --vsync off --ao 8 --script "$out/quit.txt" \
    builtin:fractal:512 >"$out/window.txt" 2>&1 || { echo "ao-check: the window failed, see $out/window.txt" >&2; status=1; }
  grep "occlusion samples per pixel" "$out/window.txt" || echo "ao-check: the window never reached 64 samples per pixel"
fi
exit $status
