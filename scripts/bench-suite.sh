#!/usr/bin/env bash
# The experiment suite: reproduces the seeds' measurements on the GPU at hand and writes CSV,
# plots and a Markdown report (the source of docs/PERFORMANCE.md).
#
#   1. Ray-casting (InK Table 1 / Figs. 6-7): every dataset found (the real volumes in
#      tests/data/real, avg152T1 from ../shared/data when it is there, and builtin volumes at
#      256^3, 512^3 and 1024^3), a sweep of isovalues
#      suggested by each volume's histogram, an orbit of 8 views, 1024x1024, every renderer
#      (inkray --headless --pipeline multi,paper,single,plain): the default multi-kernel pipeline
#      and the InK paper's pipeline with every compaction method, the single kernel and the plain
#      macrocell caster (the baseline). Each run also does the per-stage diagnostic pass.
#   2. Compaction sweeps (Redzone Fig. 4, Jumping Jack Fig. 11): size x kept fraction x pattern
#      for every method and CUB (inkray compact-bench). These run first: their time is bounded.
#   3. Render scenes (GPU modes): scripts/render-scenes.sh (render_bench on builtin fractals at
#      two distances and 4K; --quick: its --quick subset) into render-scenes.txt; runs after the
#      datasets, under the same budget.
#   4. Report: scripts/bench_report.py turns the CSVs into tables, claim verdicts and plots.
#
# Usage: scripts/bench-suite.sh [--quick | --smoke] [--out DIR] [--pack DIR] [--data DIR] [--budget S]
#   --quick     fewer datasets, isovalues and frames (under 2 minutes on an H100)
#   --smoke     tiny sizes on the CPU renderer: checks the suite itself on a machine with no GPU
#   --out DIR   where results go (default ./out/bench)
#   --pack DIR  afterwards, put report.md, the figures and a tar.gz of everything into DIR
#               (at most 8 files: for copying results off a machine)
#   --data DIR  the real datasets (default tests/data/real in the repository)
#   --budget S  start no render after S seconds and stop one still running then (the compaction
#               sweeps run first, the report last); what was left out is listed in the report.
#               Default 540 (--quick: 100), so that the whole suite fits in 10 (2) minutes.
# Environment: INKRAY_BUILD_DIR (default ./build): inkray (and, in the GPU modes, render_bench)
# built there if missing;
# INKRAY_SHARED_DATA (default ../shared/data) for avg152T1; INKRAY_COMMIT names the commit of an
# exported or copied tree (it wins over git's answer).
# Needs: bash, cmake + a CUDA toolkit to build, python3 for the report (matplotlib for plots).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
mode=full
out=$root/out/bench
pack=
budget=
data=$root/tests/data/real
# The one volume not kept in the repository (its licence is not the VTK one), when present.
shared=${INKRAY_SHARED_DATA:-$root/../shared/data}

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --quick) mode=quick ;;
    --smoke) mode=smoke ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --pack) pack=${2:?--pack needs a folder}; shift ;;
    --data) data=${2:?--data needs a folder}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench-suite: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# ---- What each mode runs ------------------------------------------------------------------------
# The Table 1 protocol: 1024x1024, 8 views, every renderer, every method in the two multi-kernel
# pipelines. Frames per view and
# the number of isovalues are what the time limits allow. compact-bench sizes include 2^22, the
# 4M-element stream of JJ Fig. 11.
device=gpu size=1024x1024 orbit=8
case $mode in
  full)  frames=16 warmup=3 isos=suggested:5 bench_args=(--sizes 20,22,24,27) scene_args=() default_budget=540 ;;
  quick) frames=8  warmup=2 isos=suggested:3 bench_args=(--quick --sizes 22,24) scene_args=(--quick) default_budget=100 ;;
  smoke) frames=2  warmup=0 isos=suggested:2 bench_args=(--quick) scene_args=() device=cpu size=48x48 orbit=2 default_budget= ;;
esac
# The multi and paper pipelines run with every method; single and plain ignore the method.
pipelines=multi,paper,single,plain
# The time limits (10 minutes, --quick 2) hold by construction: what does not fit is left out
# and listed in the report.
budget=${budget:-$default_budget}

# tag|volume|modes: the real volumes (README of the data folder), then the builtin ones.
datasets=(
  "neghip|$data/neghip_66x66x66_uint8.raw|full quick smoke"
  "bolt|$data/bolt_70x123x66_uint8.raw|full"
  "headsq|$data/headsq_64x64x93_int16.raw|full quick"
  "headmr|$data/HeadMRVolume.mhd|full"
  "avg152t1|$shared/avg152T1_RL_nifti.nii.gz|full"
  "carotid|$data/carotid_76x49x45_float32.raw|full"
  "frog|$data/frog/frogtissue.mhd|full quick"
  "fractal-256|builtin:fractal:256|full quick"
  "fractal-512|builtin:fractal:512|full quick"
  "marschner-lobb-256|builtin:marschner-lobb:256|full"
  "sphere-512|builtin:sphere:512|full"
  "fractal-1024|builtin:fractal:1024|full"
  "fractal-32|builtin:fractal:32|smoke"
)

# ---- Progress ---------------------------------------------------------------------------------------
t_start=$(date +%s)
step=0
steps=0
progress() { # progress LABEL: one step done, LABEL is the next
  local width=30 filled elapsed
  filled=$((steps ? step * width / steps : width))
  elapsed=$(($(date +%s) - t_start))
  local bar
  bar=$(printf '%*s' "$filled" '' | tr ' ' '#')$(printf '%*s' $((width - filled)) '' | tr ' ' '.')
  if [[ -t 2 ]]; then
    printf '\r\033[K[%s] %d/%d %3d s  %s' "$bar" "$step" "$steps" "$elapsed" "$1" >&2
    ((step == steps)) && printf '\n' >&2
  else
    printf '[%s] %d/%d %3d s  %s\n' "$bar" "$step" "$steps" "$elapsed" "$1" >&2
  fi
}

# ---- Build ----------------------------------------------------------------------------------------
# inkray is required; render_bench (the render scenes, GPU modes only) is built beside it, and
# when it cannot be, the scenes are listed as not measured rather than failing the suite.
inkray=$build/inkray
render_bench=$build/tests/render/render_bench
targets=(inkray)
[[ $device == gpu ]] && targets+=(render_bench)
if [[ ! -x $inkray || ($device == gpu && ! -x $render_bench) ]]; then
  echo "bench-suite: building ${targets[*]} in $build" >&2
  if [[ ! -f $build/build.ninja && ! -f $build/Makefile ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DINKRAY_WINDOW=OFF \
      ${INKRAY_CUDA_ARCH:+-DCMAKE_CUDA_ARCHITECTURES=$INKRAY_CUDA_ARCH} >/dev/null
  fi
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null ||
    cmake --build "$build" -j "$(nproc)" --target inkray >/dev/null
  [[ -x $inkray ]] || {
    echo "bench-suite: building inkray failed; run cmake --build $build --target inkray to see why" >&2
    exit 1
  }
fi

mkdir -p "$out/logs" "$out/render" "$out/images"
rm -f "$out"/render/*.csv "$out"/images/*.png "$out"/compact*.csv "$out"/render-scenes.txt
rm -rf "$out/render-scenes"

# ---- Environment: what the numbers were measured on -----------------------------------------------
{
  echo "mode=$mode"
  echo "date=$(date -u +%Y-%m-%d)"
  echo "time_utc=$(date -u +%H:%M:%S)"
  # A copy without git history, or with a .git that is not its own (an exported or copied tree),
  # names its commit in INKRAY_COMMIT, which wins over what git says.
  if [[ -n ${INKRAY_COMMIT:-} ]]; then
    echo "commit=$INKRAY_COMMIT"
    echo "worktree=exported commit"
  elif commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null); then
    echo "commit=$commit"
    if [[ -n $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
      echo "worktree=modified"
    else
      echo "worktree=clean"
    fi
  else
    echo "commit=unknown"
    echo "worktree="
  fi
  echo "inkray=$("$inkray" --version 2>/dev/null)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
    echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "gpu_memory=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader 2>/dev/null | head -1)"
  else
    echo "gpu=none"
  fi
  echo "cuda=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo 2>/dev/null | head -1) ($(nproc) cores)"
  printf '%s\n' "device=$device" "size=$size" "orbit=$orbit" "frames=$frames" "warmup=$warmup" "isovalues=$isos" \
    "pipelines=$pipelines"
} >"$out/env.txt"

# ---- The runs ---------------------------------------------------------------------------------------
selected=()
for entry in "${datasets[@]}"; do
  IFS='|' read -r tag volume modes <<<"$entry"
  [[ " $modes " == *" $mode "* ]] || continue
  if [[ $volume != builtin:* && ! -e $volume ]]; then
    echo "bench-suite: $tag: $volume not found; skipped" >&2
    continue
  fi
  selected+=("$tag|$volume")
done
steps=$((${#selected[@]} + 2))
[[ $device == gpu ]] && steps=$((steps + 1))
: >"$out/skipped.txt"

progress "compaction sweeps"
if [[ $device == gpu ]]; then
  limit=()
  [[ -n $budget ]] && limit=(timeout $((budget / 2)))
  "${limit[@]}" "$inkray" compact-bench "${bench_args[@]}" --csv "$out/compact.csv" >"$out/logs/compact-bench.txt" 2>&1 ||
    echo "compact-bench: exit $?: $(grep -m1 'inkray:' "$out/logs/compact-bench.txt")" >>"$out/skipped.txt"
else
  echo "compact-bench: not run on the CPU (smoke mode)" >>"$out/skipped.txt"
fi
step=$((step + 1))

for entry in "${selected[@]}"; do
  IFS='|' read -r tag volume <<<"$entry"
  progress "render $tag"
  step=$((step + 1))
  limit=()
  if [[ -n $budget ]]; then
    left=$((budget - ($(date +%s) - t_start)))
    if ((left < 20)); then
      echo "$tag: not run: the --budget of $budget s was spent" >>"$out/skipped.txt"
      continue
    fi
    limit=(timeout "$left")
  fi
  "${limit[@]}" "$inkray" --headless --device "$device" --size "$size" --frames "$frames" --warmup "$warmup" \
    --orbit "$orbit" --method all --pipeline "$pipelines" --iso "$isos" --quiet \
    --csv "$out/render/$tag.csv" --png "$out/images/$tag.png" "$volume" >"$out/logs/render-$tag.txt" 2>&1
  rc=$?
  if ((rc == 124)); then
    echo "$tag: stopped: the --budget of $budget s ran out" >>"$out/skipped.txt"
    rm -f "$out/render/$tag.csv"
  elif ((rc != 0)); then
    echo "$tag: exit $rc: $(grep -m1 '^inkray:' "$out/logs/render-$tag.txt")" >>"$out/skipped.txt"
    rm -f "$out/render/$tag.csv"
    ((rc == 2)) || echo "bench-suite: $tag failed (exit $rc), see $out/logs/render-$tag.txt" >&2
  fi
done

# The render scenes: render_bench over fixed scenes; its summary table goes into the report.
if [[ $device == gpu ]]; then
  progress "render scenes"
  step=$((step + 1))
  limit=()
  left=
  if [[ -n $budget ]]; then
    left=$((budget - ($(date +%s) - t_start)))
    limit=(timeout "$left")
  fi
  if [[ ! -x $render_bench ]]; then
    echo "render scenes: not run: $render_bench could not be built (cmake --build $build --target render_bench)" >>"$out/skipped.txt"
  elif [[ -n $left ]] && ((left < 20)); then
    echo "render scenes: not run: the --budget of $budget s was spent" >>"$out/skipped.txt"
  else
    INKRAY_BUILD_DIR=$build "${limit[@]}" "$root/scripts/render-scenes.sh" "${scene_args[@]}" --out "$out/render-scenes" \
      >"$out/render-scenes.txt" 2>&1
    rc=$?
    if ((rc == 124)); then
      echo "render scenes: stopped: the --budget of $budget s ran out (the scenes done are in render-scenes/)" >>"$out/skipped.txt"
    elif ((rc != 0)); then
      echo "render scenes: exit $rc: $(grep -m1 'render-scenes:' "$out/render-scenes.txt")" >>"$out/skipped.txt"
    elif grep -q 'render-scenes: .* failed' "$out/render-scenes.txt"; then
      grep 'render-scenes: .* failed' "$out/render-scenes.txt" >>"$out/skipped.txt"
    fi
  fi
else
  echo "render scenes: not run on the CPU (smoke mode; render_bench needs a GPU)" >>"$out/skipped.txt"
fi

progress "report"
python3 "$root/scripts/bench_report.py" "$out" >"$out/logs/report.txt" 2>&1 || {
  cat "$out/logs/report.txt" >&2
  echo "bench-suite: the report failed" >&2
  exit 1
}
step=$((step + 1))
progress "done"
cat "$out/logs/report.txt"
[[ -s $out/skipped.txt ]] && { echo "not measured:"; sed 's/^/  /' "$out/skipped.txt"; }
echo "results: $out/report.md ($(($(date +%s) - t_start)) s)"

if [[ -n $pack ]]; then
  mkdir -p "$pack"
  tar czf "$pack/bench-results.tar.gz" -C "$out" .
  cp "$out/report.md" "$pack/"
  # The figures, at most 6 so that with the two files above at most 8 leave the machine.
  if [[ -d $out/plots ]]; then
    find "$out/plots" -maxdepth 1 -name '*.png' | sort | head -6 | xargs -r cp -t "$pack/"
  fi
fi
exit 0
