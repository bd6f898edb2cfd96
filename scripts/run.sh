#!/usr/bin/env bash
# README command 1: sets up and runs inkray. With a display: the window on the built-in volume
# (or the VOLUME and options given). Without one: a headless run that prints frame timings and
# writes inkray.png. Arguments are passed to inkray.
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
echo "inkray: no display: running headless on the built-in volume; the last frame goes to inkray.png"
exec "$build/inkray" --headless --frames 20 --png inkray.png
