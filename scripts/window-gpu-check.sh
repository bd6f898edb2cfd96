#!/usr/bin/env bash
# The window on a GPU server with no display: opens the inkray window with its OpenGL context on
# the NVIDIA GPU (so that frames reach it through CUDA-GL interop), then
#   1. --bench-window: the same scene headless and in the window, for each pipeline of the P
#      key's cycle and each display path (egl-image, pbo, host-copy), both FPS and their ratio
#      (target: window >= 0.9x headless, display overhead <= 0.05 ms a frame at 1024^2);
#   2. a scripted session: a screenshot per compaction method, then one per pipeline of the P
#      cycle, then an isovalue step, then E (the surface as a mesh, extracted on the GPU).
#      Screenshots are named after what their log line says was drawn (pipeline, method), never
#      after what the script expected.
# Prints the logs, then a summary last.
#
# The GPU machine has the NVIDIA driver but no SDL2, GLEW or GLVND libraries: make the bundle here
# first (scripts/window-gpu-libs.sh: a window-enabled inkray and its libraries in
# .winlibs/inkray-window.tar.gz), carry .winlibs, and this script unpacks it and runs with
# LD_LIBRARY_PATH pointing at its libraries. Without the bundle it runs INKRAY as it is.
#
# Two ways to get a GPU context without a display (WINDOW_GL):
#   egl (default)  SDL's offscreen video driver: the window is an EGL surface, and NVIDIA's EGL
#                  vendor library gives the context on the GPU (no X server at all);
#   glx            a virtual X server (Xvfb) and GLX with NVIDIA's GLX vendor library. This needs
#                  an X server with NVIDIA's GLX; against Xvfb's Mesa GLX the NVIDIA library
#                  offers no visuals, and SDL fails with "Couldn't find matching GLX visual".
#
# Usage: scripts/window-gpu-check.sh [INKRAY] [VOLUME]
#   INKRAY  a window-enabled inkray (default: the bundle's, else build/inkray)
#   VOLUME  default builtin:fractal:256
# Environment: OUT (default ./out) receives window-gpu-check.tar.gz (logs, screenshots),
#   window-gpu-summary.txt and two screenshots; WINDOW_SIZE (default 1024x1024); BENCH_FRAMES
#   (default 2000); WINDOW_GL (egl or glx); XVFB (glx: default Xvfb from PATH); WINDOW_BUNDLE
#   (default .winlibs/inkray-window.tar.gz).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
volume=${2:-builtin:fractal:256}
size=${WINDOW_SIZE:-1024x1024}
frames=${BENCH_FRAMES:-2000}
top=${OUT:-$root/out}
work=$(mktemp -d "${TMPDIR:-/tmp}/window-gpu-check-XXXXXX")
logs=$work/window-gpu
mkdir -p "$logs" "$top"

bundle=${WINDOW_BUNDLE:-$root/.winlibs/inkray-window.tar.gz}
if [[ -n ${1:-} ]]; then
  inkray=$(realpath "$1")
elif [[ -f $bundle ]]; then
  mkdir -p "$work/bundle"
  tar -xzf "$bundle" -C "$work/bundle" || { echo "window-gpu-check: cannot unpack $bundle"; exit 1; }
  inkray=$work/bundle/bin/inkray
  export LD_LIBRARY_PATH=$work/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "window-gpu-check: $(head -2 "$work/bundle/MANIFEST" | tail -1)"
else
  inkray=$root/build/inkray
fi
if [[ ! -x $inkray ]]; then
  echo "window-gpu-check: no program at $inkray (build it, or make the bundle: scripts/window-gpu-libs.sh)"
  exit 1
fi

xvfb_pid=
cleanup() { [[ -n $xvfb_pid ]] && kill "$xvfb_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mode=${WINDOW_GL:-egl}
if [[ $mode == egl ]]; then
  export SDL_VIDEODRIVER=offscreen
  for f in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
    [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -f $f ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$f
  done
elif [[ -z ${DISPLAY:-} ]]; then
  export DISPLAY=:97
  "${XVFB:-Xvfb}" "$DISPLAY" -screen 0 1600x1600x24 -nolisten tcp -fp built-ins >"$logs/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 50); do
    [[ -e /tmp/.X11-unix/X${DISPLAY#:} ]] && break
    sleep 0.1
  done
  if ! kill -0 "$xvfb_pid" 2>/dev/null; then
    echo "window-gpu-check: Xvfb did not start:"
    tail -20 "$logs/xvfb.log"
    exit 1
  fi
fi
export __GLX_VENDOR_LIBRARY_NAME=${__GLX_VENDOR_LIBRARY_NAME:-nvidia}

# 1. The benchmark.
timeout 300 "$inkray" --device gpu --bench-window --bench-frames "$frames" --window "$size" "$volume" \
  >"$logs/bench.log" 2>&1
bench_rc=$?
cat "$logs/bench.log"

# 2. The scripted session. The pipelines of the P cycle are the ones the benchmark measured
# (it runs the cycle); one press more than that brings the window back to where it started.
cycle=$(grep -oE 'bench-window pipeline=[a-z]+' "$logs/bench.log" | sed 's/.*=//' | awk '!seen[$0]++' | wc -l)
((cycle > 0)) || cycle=4
{
  echo "# time(s) event: a screenshot per method once the FPS has settled, then one per pipeline"
  t=2
  for m in 1 2 3 4 5; do
    echo "$t.0 key $m"
    echo "$((t + 2)).0 screenshot shot-m$m.png"
    t=$((t + 2))
  done
  # Back to InK-Compact, the method the pipelines are compared with.
  echo "$t.05 key 1"
  for ((p = 1; p <= cycle; p++)); do
    echo "$t.1 key p"
    echo "$((t + 2)).0 screenshot shot-p$p.png"
    t=$((t + 2))
  done
  echo "$t.1 key shift+Up"
  echo "$((t + 2)).0 screenshot shot-iso.png"
  # E: the drawn surface as a mesh, extracted on the GPU (into a folder of its own: the mesh is
  # too big for the results; its log line says what it holds).
  echo "$((t + 2)).2 key e"
  echo "$((t + 4)).1 quit"
} >"$logs/events.txt"
meshes=$(mktemp -d "${TMPDIR:-/tmp}/window-gpu-meshes-XXXXXX")
(cd "$logs" && timeout 300 "$inkray" --device gpu --method ink-compact --window "$size" --vsync off \
  --mesh-dir "$meshes" --script "$logs/events.txt" "$volume" >"$logs/window.log" 2>&1)
rc=$?
rm -rf "$meshes"
cat "$logs/window.log"

# Screenshot names from their log lines: NN-PIPELINE-METHOD.png (the method only where the
# pipeline compacts: the single kernel's line still names the method it would use).
shots=()
n=0
while read -r line; do
  file=$(sed -E 's/.*screenshot ([^ ]+) .*/\1/' <<<"$line")
  pipeline=$(sed -E 's/.* pipeline=([^ ]+).*/\1/' <<<"$line")
  method=$(sed -E 's/.* method=([^ ]+).*/\1/' <<<"$line")
  n=$((n + 1))
  label=$(printf '%02d-%s' "$n" "$pipeline")
  [[ $pipeline == single || $pipeline == plain ]] || label+="-$method"
  [[ $file == shot-iso.png ]] && label+="-iso-up"
  [[ -f $logs/$file ]] && mv "$logs/$file" "$logs/$label.png"
  shots+=("$label.png $line")
done < <(grep -E '^inkray: screenshot ' "$logs/window.log")

{
  echo "== window-gpu-check summary =="
  grep -hE '^inkray: (OpenGL|.* frames shown)' "$logs/bench.log" | head -2
  echo "-- --bench-window ($size, $frames frames a measurement): headless vs window"
  printf '%-11s %-12s %-10s %12s %12s %8s %12s\n' pipeline method display "headless FPS" "window FPS" ratio "overhead ms"
  grep -E '^inkray: bench-window pipeline=' "$logs/bench.log" |
    sed -E 's/.*pipeline=([^ ]+) method=([^ ]+) size=[^ ]+ display=([^ ]+) headless_fps=([^ ]+) .* window_fps=([^ ]+) .* ratio=([^ ]+) overhead_ms=([^ ]+).*/\1 \2 \3 \4 \5 \6 \7/' |
    while read -r p m d hf wf r o; do printf '%-11s %-12s %-10s %12s %12s %8s %12s\n' "$p" "$m" "$d" "$hf" "$wf" "$r" "$o"; done
  grep -E '^inkray: bench-window done' "$logs/bench.log" || echo "bench-window did not finish (exit $bench_rc)"
  echo "-- scripted session: screenshots as their log lines name them"
  for s in "${shots[@]}"; do
    name=${s%% *}
    line=${s#* }
    sed -E "s/.* pipeline=([^ ]+) device=([^ ]+) display=([^ ]+).* fps=([^ ]+) frame_ms=([^ ]+).*/$name: \1 on \2, \3, \4 FPS (\5 ms)/" <<<"$line"
  done
  grep -E '^inkray: mesh ' "$logs/window.log" || echo "E wrote no mesh"
  echo "bench exit status: $bench_rc, window exit status: $rc"
} >"$logs/summary.txt"

# What comes back: the tarball of everything, the summary, two screenshots for the docs.
tar -czf "$top/window-gpu-check.tar.gz" -C "$work" window-gpu
cp "$logs/summary.txt" "$top/window-gpu-summary.txt"
first=$(ls "$logs" | grep -E '^01-.*\.png$' | head -1)
multi=$(ls "$logs" | grep -E '^[0-9]+-multi-.*\.png$' | head -1)
for f in $first $multi; do cp "$logs/$f" "$top/window-gpu-$f"; done
cat "$logs/summary.txt"
((bench_rc == 0 && rc == 0))
