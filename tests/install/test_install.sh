#!/usr/bin/env bash
# The installed tree as another project sees it: `cmake --install` into a fresh prefix, then
# examples/compaction_consumer and examples/extract_consumer configured with find_package(inkray)
# against that prefix, built and run; then the same programs compiled with the flags of
# inkray-compaction.pc and inkray-extract.pc. The compaction consumer needs a CUDA device: without
# one it answers 77 and only building and linking are checked. The extract consumer extracts a
# sphere on the CPU anywhere (and on the GPU where there is one) and writes it as a PLY file.
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
for f in bin/inkray include/inkray/compaction.h include/inkray/extract.h include/inkray/compaction/compaction.h \
         include/inkray/data/types.h lib/cmake/inkray/inkrayConfig.cmake \
         lib/cmake/inkray/inkrayConfigVersion.cmake lib/cmake/inkray/inkrayTargets.cmake \
         lib/pkgconfig/inkray-compaction.pc lib/pkgconfig/inkray-extract.pc; do
  [[ -e $work/prefix/$f ]] || { echo "FAIL: $f not installed"; exit 1; }
done
"$work/prefix/bin/inkray" --version

# The header on its own: nothing from the inkray source tree may be needed.
cuda_include=$(sed -n 's/^Cflags:.* -I\([^ ]*\)$/\1/p' "$work/prefix/lib/pkgconfig/inkray-compaction.pc")
for header in compaction extract; do
  echo "#include <inkray/$header.h>" >"$work/alone.c"
  "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$work/prefix/include" -I"$cuda_include" "$work/alone.c"
done

cmake -S "$source/examples/compaction_consumer" -B "$work/consumer" -G "$generator" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/consumer-configure.log" ||
  { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; exit 1; }
run_consumer "$work/consumer/compaction_consumer" "find_package(inkray) consumer"

cmake -S "$source/examples/extract_consumer" -B "$work/extract" -G "$generator" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/extract-configure.log" ||
  { cat "$work/extract-configure.log"; exit 1; }
cmake --build "$work/extract" >"$work/extract-build.log" || { cat "$work/extract-build.log"; exit 1; }
"$work/extract/extract_consumer" "$work/sphere.ply" || { echo "FAIL: the extract consumer"; exit 1; }
head -c 3 "$work/sphere.ply" | grep -q ply || { echo "FAIL: the extract consumer wrote no PLY file"; exit 1; }
echo "find_package(inkray) extract consumer: ran, sphere closed, PLY written"

if command -v pkg-config >/dev/null 2>&1; then
  # shellcheck disable=SC2046
  "$cc" -std=c11 "$source/examples/compaction_consumer/main.c" -o "$work/pc_consumer" \
        $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs inkray-compaction)
  run_consumer "$work/pc_consumer" "pkg-config consumer"
  # shellcheck disable=SC2046
  "$cc" -std=c11 "$source/examples/extract_consumer/main.c" -o "$work/pc_extract" \
        $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs inkray-extract)
  "$work/pc_extract" || { echo "FAIL: the pkg-config extract consumer"; exit 1; }
  echo "pkg-config extract consumer: ran"
else
  echo "pkg-config not installed: the pkg-config link check is left out"
fi
