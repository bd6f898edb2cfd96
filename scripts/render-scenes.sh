#!/usr/bin/env bash
# The render-speed scenes of docs/render.md on the GPU at hand: builtin fractal volumes at
# 256^3, 512^3 and 1024^3, two distances (1: 40 % of the pixels hit; 0.7: 81 %) at 1024x1024,
# 3840x2160 at distance 0.7, and two surfaces (one translucent) on 512^3, each through
# render_bench (every renderer in one process: the independent caster, the plain macrocell
# caster, the single kernel, the persistent and multi pipelines with all five methods, the
# paper's pipeline). Prints one summary table last: frame ms of each renderer and its speed
# relative to the single kernel and to the faster independent caster (above 1: faster).
#
# Usage: scripts/render-scenes.sh [--quick] [--out DIR] [-- RENDER_BENCH_ARGS...]
#   --quick   256^3 and 512^3 at 1024x1024 only, fewer frames
# Environment: INKRAY_BUILD_DIR (default ./build), with tests/render/render_bench built.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
out=$root/out/render-scenes
quick=0
extra=()
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "render-scenes: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bench=$build/tests/render/render_bench
[[ -x $bench ]] || { echo "render-scenes: $bench is not built (cmake --build $build --target render_bench)" >&2; exit 2; }
mkdir -p "$out"

# name|volume|size|distance
scenes=(
  "f256-d1|builtin:fractal:256|1024x1024|1"
  "f512-d1|builtin:fractal:512|1024x1024|1"
  "f1024-d1|builtin:fractal:1024|1024x1024|1"
  "f256-d0.7|builtin:fractal:256|1024x1024|0.7"
  "f512-d0.7|builtin:fractal:512|1024x1024|0.7"
  "f1024-d0.7|builtin:fractal:1024|1024x1024|0.7"
  "f256-4k-d0.7|builtin:fractal:256|3840x2160|0.7"
  "f512-4k-d0.7|builtin:fractal:512|3840x2160|0.7"
  "f512-2surf-d0.7|builtin:fractal:512|1024x1024|0.7|--surfaces 100:0.35,160:1"
)
frames=40 warmup=5
((quick)) && { scenes=("${scenes[0]}" "${scenes[1]}" "${scenes[3]}" "${scenes[4]}"); frames=20 warmup=3; }

for s in "${scenes[@]}"; do
  IFS='|' read -r name vol size dist more <<<"$s"
  # shellcheck disable=SC2086
  "$bench" "$vol" 127.5 --size "$size" --distance "$dist" --frames "$frames" --warmup "$warmup" $more "${extra[@]}" \
    >"$out/$name.txt" 2>&1 || echo "render-scenes: $name failed (see $out/$name.txt)" >&2
done

# Summary: one row per renderer, one column per scene: mean frame ms, x the single kernel and x
# the faster independent caster.
python3 - "$out" "${scenes[@]}" <<'PY'
import sys, os
out, scenes = sys.argv[1], [s.split('|')[0] for s in sys.argv[2:]]
rows, order = {}, []
gpu = ""
num = lambda x: float(x) if x not in ("-", "") else 0.0
for sc in scenes:
    path = os.path.join(out, sc + ".txt")
    if not os.path.exists(path): continue
    for line in open(path):
        if line.startswith("# ") and "," in line and not line.startswith("# refinement"): gpu = line[2:].split(",")[0]
        parts = line.split("|")[0].split()  # variant mean median p95 FPS x_plain x_single [x_indep]
        if len(parts) >= 7 and parts[0] != "variant" and not line.startswith("#") and "|" in line:
            name = parts[0]
            if name not in rows: rows[name] = {}; order.append(name)
            rows[name][sc] = (num(parts[1]), num(parts[6]), num(parts[7]) if len(parts) > 7 else 0.0)
print(f"\n== render scenes on {gpu}: mean frame ms (x single kernel / x faster independent caster; above 1 = faster) ==")
print(f"{'renderer':34s}" + "".join(f"{s:>22s}" for s in scenes))
for name in order:
    cells = []
    for sc in scenes:
        v = rows[name].get(sc)
        ratio = lambda x: f"{x:4.2f}" if x > 0 else "  - "
        cells.append(f"{v[0]:8.3f} ({ratio(v[1])}/{ratio(v[2])})" if v else f"{'-':>22s}")
    print(f"{name:34s}" + "".join(f"{c:>22s}" for c in cells))
PY
