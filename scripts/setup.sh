#!/usr/bin/env bash
# Sets inkray up on a Debian machine: installs the Debian packages it needs (when run as root;
# otherwise prints the apt-get line to run and stops), configures with CMake and builds.
# Environment: INKRAY_BUILD_DIR (default ./build), CI=true turns warnings into errors,
# INKRAY_CMAKE_ARGS adds configure arguments (e.g. -DCMAKE_CUDA_ARCHITECTURES=90).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}

packages=(cmake ninja-build gcc g++ pkg-config zlib1g-dev
          libgdcm-dev libtiff-dev libexpat1-dev liblz4-dev liblzma-dev
          libsdl2-dev libglew-dev libgl-dev
          xvfb xauth libgl1-mesa-dri
          clang libclang-rt-14-dev
          libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "inkray setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "inkray setup: missing Debian packages. Run:"
    echo "  sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
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
[[ -f $build/CMakeCache.txt ]] || args+=(-G Ninja)
[[ ${CI:-} == true ]] && args+=(-DINKRAY_WERROR=ON)
# shellcheck disable=SC2206
args+=(${INKRAY_CMAKE_ARGS:-})
cmake "${args[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
