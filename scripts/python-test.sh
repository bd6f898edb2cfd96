#!/usr/bin/env bash
# The Python package's tests: builds and installs the package (pip install ., the extension and
# the program through scikit-build-core) into a virtual environment under the build folder, then
# runs pytest on tests/python, comparing with the CTest build's program (build/inkray) where it
# exists. Needs python3 with venv and PyPI (scikit-build-core, numpy, pytest, scikit-image; zarr,
# numcodecs and h5py for the Zarr and HDF5 tests).
# Environment: INKRAY_BUILD_DIR (default ./build), CI=true turns warnings into errors.
# Extra arguments go to pytest (e.g. -k render).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
venv=$build/python-venv
python=${PYTHON:-python3}

if [[ ! -x $venv/bin/python ]]; then
  if ! "$python" -m venv "$venv"; then
    echo "inkray python-test: '$python -m venv' failed; install python3-venv (sudo apt-get install -y python3-venv)"
    exit 1
  fi
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
if ! "${pip[@]}" install scikit-build-core numpy pytest scikit-image; then
  # A machine without PyPI (a GPU server with no network): say so and skip, except in CI.
  [[ ${CI:-} == true ]] && exit 1
  echo "inkray python-test: SKIPPED: could not install scikit-build-core, numpy, pytest and scikit-image from PyPI;"
  echo "  the Python package's tests need them (scripts/python-gpu-check.sh installs from a folder of wheels)"
  exit 0
fi
# The Zarr and HDF5 tests write their files with zarr-python, numcodecs and h5py; without them
# those tests skip, saying why.
"${pip[@]}" install "zarr>=3" numcodecs h5py ||
  echo "inkray python-test: note: zarr, numcodecs or h5py could not be installed; the Zarr and HDF5 tests skip"
skbuild_args=(-C "build-dir=$build/python-build")
[[ ${CI:-} == true ]] && skbuild_args+=(-C cmake.define.INKRAY_WERROR=ON)
# No build isolation: the environment above already has the build requirements.
"${pip[@]}" install --no-build-isolation "${skbuild_args[@]}" "$root"

[[ -x $build/inkray ]] && export INKRAY_BINARY=$build/inkray
cd "$root"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python "$@"
