#!/usr/bin/env bash
# Sets inkray up on a Debian machine: installs the Debian packages it needs when run as root;
# otherwise prints the apt-get line to run and stops when a required one is missing, and only
# reports missing optional ones. Then configures with CMake and builds.
# Environment: INKRAY_BUILD_DIR (default ./build), CI=true turns warnings into errors,
# INKRAY_CMAKE_ARGS adds configure arguments (e.g. -DCMAKE_CUDA_ARCHITECTURES=90).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}

# Required: without these nothing builds. Optional: each adds a feature (ninja: faster builds;
# zlib: the system's instead of the copy in third_party/zlib; GDCM, libtiff, expat, lz4, lzma:
# the DICOM, TIFF and VTK image data loaders; cJSON, c-blosc, zstd: Zarr and OME-Zarr and their
# codecs; HDF5: the HDF5 loader; SDL2/GLEW/GL: the window; Xvfb: the window tests
# without a display; clang: the header fuzzer; pkg-config: the installed package's pkg-config
# test; OpenMPI: distributed runs; python3-dev, python3-venv: the Python package and its tests);
# NCCL (distributed frames composited on the GPUs) has no Debian package here: CMake finds the
# one the CUDA toolkit ships (or a system one, or pip's nvidia-nccl-cu13) and builds without it;
# a new optional dependency goes here too. Missing optional
# packages are installed when root, else only reported.
required=(cmake gcc g++)
optional=(ninja-build pkg-config zlib1g-dev
          libgdcm-dev libtiff-dev libexpat1-dev liblz4-dev liblzma-dev
          libcjson-dev libblosc-dev libzstd-dev libhdf5-dev
          libsdl2-dev libglew-dev libgl-dev
          xvfb xauth libgl1-mesa-dri
          clang libclang-rt-14-dev
          libopenmpi-dev openmpi-bin
          python3-dev python3-venv)
# A package counts as present when dpkg has it, or (tools) when its command is on PATH: a user
# without root may have cmake or gcc from elsewhere.
declare -A command_of=([cmake]=cmake [gcc]=gcc [g++]=g++ [ninja-build]=ninja [pkg-config]=pkg-config
                       [clang]=clang [xvfb]=Xvfb [openmpi-bin]=mpirun)
have() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" && return 0
  [[ -n ${command_of[$1]:-} ]] && command -v "${command_of[$1]}" >/dev/null 2>&1
}
missing_required=() missing_optional=()
for p in "${required[@]}"; do have "$p" || missing_required+=("$p"); done
for p in "${optional[@]}"; do have "$p" || missing_optional+=("$p"); done
missing=("${missing_required[@]}" "${missing_optional[@]}")
if ((${#missing[@]})) && [[ $(id -u) -eq 0 ]]; then
  echo "inkray setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    # One optional package this release lacks must not stop the required ones.
    ((${#missing_required[@]} == 0)) ||
      apt-get install -y -qq --no-install-recommends "${missing_required[@]}" >/dev/null
    for p in "${missing_optional[@]}"; do
      apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
        echo "inkray setup: optional package $p could not be installed; going on without it"
    done
  fi
elif ((${#missing_required[@]})); then
  echo "inkray setup: missing Debian packages. Run:"
  echo "  sudo apt-get install -y ${missing[*]}"
  exit 1
elif ((${#missing_optional[@]})); then
  echo "inkray setup: optional packages not installed (features built without them): ${missing_optional[*]}"
  echo "  to add them: sudo apt-get install -y ${missing_optional[*]}"
fi

if ! command -v nvcc >/dev/null 2>&1; then
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "inkray setup: the CUDA toolkit (nvcc, 12.4 or newer) is needed to build; install it from NVIDIA and put nvcc on PATH"
    exit 1
  fi
fi

args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release)
[[ -f $build/CMakeCache.txt ]] || ! command -v ninja >/dev/null 2>&1 || args+=(-G Ninja)
[[ ${CI:-} == true ]] && args+=(-DINKRAY_WERROR=ON)
# shellcheck disable=SC2206
args+=(${INKRAY_CMAKE_ARGS:-})
cmake "${args[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
