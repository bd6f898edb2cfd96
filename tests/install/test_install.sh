#!/usr/bin/env bash
# The installed tree as another project sees it: `cmake --install` into a fresh prefix, then
# examples/compaction_consumer configured with find_package(inkray) against that prefix, built and
# run; then the same program compiled with the flags of inkray-compaction.pc. Running needs a CUDA
# device: without one the consumer answers 77 and only building and linking are checked.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR C_COMPILER GENERATOR
set -euo pipefail
build=$1 source=$2 cc=$3 generator=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/inkray-install-test-XXXXXX")
trap 'rm -rf "$work"' EXIT

run_consumer() {
  local rc=0
  "$1" || rc=$?
  case $rc in
    0) echo "$2: ran, results match the CPU loop" ;;
    77) echo "$2: built and linked; not run (no CUDA device)" ;;
    *) echo "FAIL: $2 exited $rc"; exit 1 ;;
  esac
}

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
for f in bin/inkray include/inkray/compaction.h lib/cmake/inkray/inkrayConfig.cmake \
         lib/cmake/inkray/inkrayConfigVersion.cmake lib/cmake/inkray/inkrayTargets.cmake \
         lib/pkgconfig/inkray-compaction.pc; do
  [[ -e $work/prefix/$f ]] || { echo "FAIL: $f not installed"; exit 1; }
done
"$work/prefix/bin/inkray" --version

# The header on its own: nothing from the inkray source tree may be needed.
cuda_include=$(sed -n 's/^Cflags:.* -I\([^ ]*\)$/\1/p' "$work/prefix/lib/pkgconfig/inkray-compaction.pc")
echo '#include <inkray/compaction.h>' >"$work/alone.c"
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$work/prefix/include" -I"$cuda_include" "$work/alone.c"

cmake -S "$source/examples/compaction_consumer" -B "$work/consumer" -G "$generator" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/consumer-configure.log" ||
  { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; exit 1; }
run_consumer "$work/consumer/compaction_consumer" "find_package(inkray) consumer"

if command -v pkg-config >/dev/null 2>&1; then
  # shellcheck disable=SC2046
  "$cc" -std=c11 "$source/examples/compaction_consumer/main.c" -o "$work/pc_consumer" \
        $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs inkray-compaction)
  run_consumer "$work/pc_consumer" "pkg-config consumer"
else
  echo "pkg-config not installed: the pkg-config link check is left out"
fi
