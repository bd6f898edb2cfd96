#!/usr/bin/env bash
# One call on a GPU machine for the Python package: install it (pip install . from the wheels in
# .whl/, no network), run its tests with the GPU ones (CuPy, PyTorch, the GPU renderer and
# extraction), run benchmarks/python_bench.py, and print a short summary last. Results go to
# $OUT (or ./out): summary.txt, logs.tar.gz (every log), python-bench.csv.
#
# The GPU machine has Python 3.12 with NumPy, CuPy and PyTorch but no network, so the build and
# test requirements come as wheels in .whl/ at the repository root, downloaded elsewhere with:
#
#   pip download --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform any -d .whl scikit-build-core pytest scikit-image
#   rm .whl/numpy-* .whl/pillow-* .whl/networkx-* .whl/imageio-* .whl/tifffile-*
#
# (scikit-build-core, pathspec, packaging; pytest, iniconfig, pluggy, pygments; scikit-image,
# scipy, lazy-loader: about 49 MB, under the 64 MiB a call can carry with the repository;
# skimage.measure needs none of the wheels removed, and NumPy is the machine's.) CMake (3.25+)
# and nvcc come from the machine. The package goes into a virtual environment that sees the
# machine's own NumPy, CuPy and PyTorch (--system-site-packages).
# Usage: scripts/python-gpu-check.sh [--no-bench]
# Environment: OUT (results), INKRAY_PY_BUILD_DIR (default ./build-pygpu), INKRAY_CUDA_ARCH
#   (default 90), PYTHON (default python3).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/out}
mkdir -p "$out"
logs=$(mktemp -d)
trap 'tar -czf "$out/logs.tar.gz" -C "$logs" . && rm -rf "$logs"' EXIT
build=${INKRAY_PY_BUILD_DIR:-$root/build-pygpu}
venv=$build/venv
summary=()
note() { summary+=("$*"); }
finish() {
  printf '%s\n' "== summary ==" "$(cat "$logs/gpu.txt" 2>/dev/null)" "${summary[@]}" | tee "$out/summary.txt"
  exit "$1"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$logs/gpu.txt"
mkdir -p "$build"
"${PYTHON:-python3}" -m venv --system-site-packages "$venv" >"$logs/venv.log" 2>&1 || {
  cat "$logs/venv.log"
  note "venv: FAILED"
  finish 1
}
py=$venv/bin/python
# --system-site-packages reaches the base interpreter's packages only; where python3 is itself a
# virtual environment's (NumPy, CuPy and PyTorch installed there), its site-packages join by a .pth.
"${PYTHON:-python3}" -c 'import site, sys; sys.prefix != sys.base_prefix and print("\n".join(site.getsitepackages()))' \
  >"$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/inkray-parent-env.pth"
"$py" -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)' | tee "$logs/versions.txt"
for lib in cupy torch; do
  "$py" -c "import $lib; print('$lib', $lib.__version__)" 2>&1 | tail -1 | tee -a "$logs/versions.txt"
done

pip_install() { "$py" -m pip --disable-pip-version-check install --no-index --find-links "$root/.whl" "$@"; }
t0=$(date +%s)
if pip_install scikit-build-core pytest >"$logs/pip-requirements.log" 2>&1 &&
   pip_install --no-deps scipy scikit-image lazy-loader >>"$logs/pip-requirements.log" 2>&1 &&
   pip_install -v --no-build-isolation -C "build-dir=$build/build" \
     -C "cmake.define.CMAKE_CUDA_ARCHITECTURES=${INKRAY_CUDA_ARCH:-90}" -C cmake.define.INKRAY_WINDOW=OFF \
     "$root" >"$logs/pip-install.log" 2>&1; then
  note "pip install .: ok in $(( $(date +%s) - t0 )) s"
else
  tail -n 40 "$logs/pip-requirements.log" "$logs/pip-install.log"
  note "pip install .: FAILED (see pip-install.log; the wheels in .whl/ are listed in this script's header)"
  finish 1
fi

cd "$root" || finish 1
"$py" -m pytest -rs -p no:cacheprovider --junitxml="$logs/pytest.xml" tests/python >"$logs/pytest.log" 2>&1
rc=$?
grep -E "^(FAILED|ERROR|SKIPPED)" "$logs/pytest.log" | head -30
note "pytest: $(tail -1 "$logs/pytest.log") (rc $rc)"

if [[ ${1:-} != --no-bench ]]; then
  "$py" benchmarks/python_bench.py --csv "$out/python-bench.csv" >"$logs/python-bench.txt" 2>&1
  note "python_bench: rc $?"
  cat "$logs/python-bench.txt"
fi
finish $rc
