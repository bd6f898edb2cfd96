#!/usr/bin/env bash
# README command 2: sets up, builds and runs the whole test suite (CTest). GPU tests report
# themselves skipped where there is no CUDA device; window tests run under Xvfb when there is no
# display. Extra arguments go to ctest (e.g. -L cpu).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
ctest_args=(--test-dir "$build" --output-on-failure -j 2 "$@")
if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run >/dev/null 2>&1; then
  exec xvfb-run -a -s "-screen 0 1600x1200x24" ctest "${ctest_args[@]}"
fi
exec ctest "${ctest_args[@]}"
