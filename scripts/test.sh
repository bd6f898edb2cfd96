#!/usr/bin/env bash
# README command 2: sets up, builds and runs the whole test suite: the CTest suite (GPU tests
# report themselves skipped where there is no CUDA device; window tests run under Xvfb when there
# is no display), then the Python package's tests (scripts/python-test.sh: pip install . into a
# virtual environment under the build folder, pytest). Extra arguments go to ctest (e.g. -L cpu);
# INKRAY_SKIP_PYTHON=1 runs CTest alone.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
ctest_args=(--test-dir "$build" --output-on-failure -j 2 "$@")
if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run >/dev/null 2>&1; then
  xvfb-run -a -s "-screen 0 1600x1200x24" ctest "${ctest_args[@]}"
else
  ctest "${ctest_args[@]}"
fi
[[ ${INKRAY_SKIP_PYTHON:-} == 1 ]] && exit 0
exec "$root/scripts/python-test.sh"
