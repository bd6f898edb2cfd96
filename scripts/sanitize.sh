#!/usr/bin/env bash
# The CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer: builds a second tree
# (build-sanitize/, or INKRAY_SANITIZE_DIR) whose C and C++ code is instrumented, then runs CTest's
# cpu label there. An out-of-bounds access, a use after free or undefined behaviour (an overflowing
# signed add, a misaligned load, a shift past the width) in the readers, the CPU renderer, the
# extraction, the options or the distributed host code fails the test that reached it. CI runs it
# after the README's test command. Extra arguments go to ctest.
#
# Not instrumented: device code and the host code nvcc compiles (.cu files). Leaks are reported
# (LeakSanitizer) and fail the test: what Open MPI and its components keep past MPI_Finalize is
# suppressed (scripts/lsan-suppressions.txt), and the distributed tests run a second pass with
# full stack unwinding, which those suppressions need.
# test_install_consumer is left out: it builds another project against the installed library,
# which would need the sanitizer runtime linked in too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_SANITIZE_DIR:-$root/build-sanitize}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# CMake takes CFLAGS, CXXFLAGS and LDFLAGS as the tree's first flags. Warnings stay warnings: the
# instrumented build's inlining brings format-truncation warnings the release build does not have.
CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" INKRAY_BUILD_DIR="$build" \
  INKRAY_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DINKRAY_WERROR=OFF" "$root/scripts/setup.sh"
asan=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$root/scripts/lsan-suppressions.txt:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest() {
  local args=(--test-dir "$build" --output-on-failure -j 2 -L cpu "$@")
  if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run >/dev/null 2>&1; then
    xvfb-run -a -s "-screen 0 1600x1200x24" ctest "${args[@]}"
  else
    ctest "${args[@]}"
  fi
}
# The cpu tests the extra arguments select, by name: ctest keeps only the last -R or -E it is
# given, so each pass runs its part of that list by name (its -R after the caller's arguments)
# rather than adding a pattern of its own that would replace the caller's.
selected=$(ctest --test-dir "$build" -N -L cpu "$@" | sed -n 's/^ *Test *#[0-9]*: *//p' | grep -v '^test_install_consumer$' || true)
only() { grep -E "$@" <<<"$selected" | paste -sd '|' || true; }
status=0
plain=$(only -v '^test_dist_')
dist=$(only '^test_dist_')
[[ -z $plain ]] || ASAN_OPTIONS=$asan run_ctest "$@" -R "^($plain)\$" || status=1
[[ -z $dist ]] || ASAN_OPTIONS=$asan:fast_unwind_on_malloc=0 run_ctest "$@" -R "^($dist)\$" || status=1
[[ -n $plain$dist ]] || { echo "sanitize.sh: no cpu test matches: $*" >&2; status=1; }
exit $status
