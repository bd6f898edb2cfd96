#!/usr/bin/env bash
# The window on a GPU server with no display: opens the inkray window with its OpenGL context on
# the NVIDIA GPU (so that frames can reach it through CUDA-GL interop) and plays a script that
# shows each compaction method, the single-kernel pipeline and an isovalue step, taking a
# screenshot of each. Prints the GL renderer, the display path and the FPS each screenshot line
# reported, and a summary last.
#
# Two ways to get a GPU context without a display (WINDOW_GL):
#   egl (default)  SDL's offscreen video driver: the window is an EGL surface, and NVIDIA's EGL
#                  vendor library gives the context on the GPU (no X server at all);
#   glx            a virtual X server (Xvfb) and GLX with NVIDIA's GLX vendor library. This needs
#                  an X server with NVIDIA's GLX; against Xvfb's Mesa GLX the NVIDIA library
#                  offers no visuals, and SDL fails with "Couldn't find matching GLX visual".
#
# Usage: scripts/window-gpu-check.sh [INKRAY] [VOLUME]
#   INKRAY  a window-enabled inkray (default build/inkray); VOLUME default builtin:fractal:256
# Environment: OUT (default ./out) receives window-gpu/ with the screenshots and the log;
#   WINDOW_SIZE (default 1024x1024); WINDOW_GL (egl or glx); XVFB (glx: default Xvfb from PATH).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
inkray=$(realpath "${1:-$root/build/inkray}")
volume=${2:-builtin:fractal:256}
size=${WINDOW_SIZE:-1024x1024}
out=${OUT:-$root/out}/window-gpu
mkdir -p "$out"
cd "$out" || exit 1

xvfb_pid=
cleanup() { [[ -n $xvfb_pid ]] && kill "$xvfb_pid" 2>/dev/null; }
trap cleanup EXIT
mode=${WINDOW_GL:-egl}
if [[ $mode == egl ]]; then
  export SDL_VIDEODRIVER=offscreen
  for f in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
    [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -f $f ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$f
  done
elif [[ -z ${DISPLAY:-} ]]; then
  export DISPLAY=:97
  "${XVFB:-Xvfb}" "$DISPLAY" -screen 0 1600x1600x24 -nolisten tcp -fp built-ins >"$out/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 50); do
    [[ -e /tmp/.X11-unix/X${DISPLAY#:} ]] && break
    sleep 0.1
  done
  if ! kill -0 "$xvfb_pid" 2>/dev/null; then
    echo "window-gpu-check: Xvfb did not start:"
    tail -20 "$out/xvfb.log"
    exit 1
  fi
fi

cat >"$out/events.txt" <<'EOF'
# time(s) event: one screenshot per method after the FPS has settled
2.0  screenshot 1-ink-compact.png
2.1  key 2
4.0  screenshot 2-ink-collate.png
4.1  key 3
6.0  screenshot 3-thrust.png
6.1  key 4
8.0  screenshot 4-jumping-jack.png
8.1  key 5
10.0 screenshot 5-redzone.png
10.1 key 1
10.2 key p
12.0 screenshot 6-single-kernel.png
12.1 key p
12.2 key shift+Up
14.0 screenshot 7-ink-compact-iso-up.png
14.1 quit
EOF

__GLX_VENDOR_LIBRARY_NAME=${__GLX_VENDOR_LIBRARY_NAME:-nvidia} timeout 120 \
  "$inkray" --device gpu --method ink-compact --window "$size" --script "$out/events.txt" "$volume" \
  >"$out/window.log" 2>&1
rc=$?
cat "$out/window.log"
echo "== summary =="
grep -E "^inkray: (OpenGL|.* frames shown)" "$out/window.log"
grep -E "^inkray: screenshot" "$out/window.log" |
  sed -E 's/.*screenshot ([^ ]+) .*method=([^ ]+) pipeline=([^ ]+) device=([^ ]+) display=([^ ]+).* fps=([^ ]+) frame_ms=([^ ]+).*/\1: \3 \2 on \4, \5, \6 FPS (\7 ms)/'
echo "window exit status: $rc"
exit $rc
