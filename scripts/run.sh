#!/usr/bin/env bash
# README command 1: sets up and runs inkray. With a display: the window on the built-in volume
# (or the VOLUME and options given). Without one: a headless run that prints frame timings and
# writes inkray.png, on the GPU, or on the CPU reference renderer where there is no NVIDIA GPU.
# Arguments are passed to inkray.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
if [[ $# -gt 0 ]]; then
  exec "$build/inkray" "$@"
fi
if [[ -n ${DISPLAY:-} || -n ${WAYLAND_DISPLAY:-} ]]; then
  exec "$build/inkray"
fi
device=gpu
if ! nvidia-smi -L >/dev/null 2>&1; then
  device=cpu
  echo "inkray: no NVIDIA GPU found (nvidia-smi -L): using the CPU reference renderer"
fi
echo "inkray: no display: running headless on the built-in volume ($device); the last frame goes to inkray.png"
exec "$build/inkray" --headless --device "$device" --frames 20 --png inkray.png
