#!/usr/bin/env python3
"""Reading OME-Zarr: inkray against zarr-python on the same array, in the same run.

Makes (once; kept in --dir) an OME-Zarr 0.4 image of the builtin fractal: N^3 uint8 (default
2048^3, 8 GiB), 128^3 chunks, blosc-lz4 with byte shuffle, 5 levels (each halving every axis).
Then, with the page cache warm (one read first):

1. decoding level 0 into memory: inkray.load (all cores) and zarr-python's array[:] into NumPy
   (its thread pool set to every core), each the median of --repeats runs; GB/s of voxels and
   the ratio zarr-python time / inkray time (targets: >= 6 GB/s and a ratio >= 1);
2. the program, headless, one frame at --level 0 and at the default --level auto: wall time
   from start to the frame printed (target: <= 2.5 s at level 0), and the level auto took.

Needs zarr-python 3, numcodecs and a GPU for part 2 (without one it runs on the CPU device and
says so). Usage: python benchmarks/zarr_bench.py [--size 2048] [--dir DIR] [--repeats 3] [--csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import inkray

ROWS = []


def program() -> str:
    return os.environ.get("INKRAY_BINARY") or str(inkray.binary_path())


def report(part, case, value, unit, note=""):
    ROWS.append((part, case, value, unit, note))
    print(f"{part:10s} {case:44s} {value:10.3f} {unit:6s} {note}", flush=True)


def make_image(root: Path, n: int) -> None:
    import numcodecs
    import zarr

    if (root / ".zattrs").exists():
        return
    print(f"writing {root} ({n}^3 uint8, 128^3 chunks, blosc-lz4, 5 levels) ...", flush=True)
    numcodecs.blosc.set_nthreads(os.cpu_count() or 1)
    volume = inkray.load(f"builtin:fractal:{n}").array  # z, y, x
    g = zarr.open_group(str(root), mode="w", zarr_format=2)
    datasets = []
    for level in range(5):
        data = volume[:: 2**level, :: 2**level, :: 2**level]
        a = g.create_array(str(level), shape=data.shape, dtype="uint8", chunks=(128, 128, 128),
                           compressors=[numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)])
        for z in range(0, data.shape[0], 128):
            a[z : z + 128] = np.ascontiguousarray(data[z : z + 128])
        s = float(2**level)
        datasets.append({"path": str(level), "coordinateTransformations": [{"type": "scale", "scale": [s, s, s]}]})
    g.attrs["multiscales"] = [{"version": "0.4", "axes": [{"name": a, "type": "space", "unit": "micrometer"} for a in "zyx"],
                               "datasets": datasets}]


def timed(fn, repeats):
    fn()  # the page cache warm, the code paths loaded
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def decode(root: Path, n: int, repeats: int) -> None:
    import zarr

    nbytes = n**3
    t_inkray = timed(lambda: inkray.load(root, level=0), repeats)
    report("decode", f"inkray.load level 0 ({os.cpu_count()} cores)", nbytes / t_inkray / 1e9, "GB/s",
           f"{t_inkray:.3f} s")
    try:
        zarr.config.set({"threading.max_workers": os.cpu_count(), "async.concurrency": 4 * (os.cpu_count() or 1)})
    except Exception as e:  # older zarr-python: its defaults
        print(f"note: zarr config not set ({e})")
    arr = zarr.open_array(str(root / "0"), mode="r")
    t_zarr = timed(lambda: arr[:], repeats)
    report("decode", "zarr-python array[:] level 0", nbytes / t_zarr / 1e9, "GB/s", f"{t_zarr:.3f} s")
    report("decode", "ratio zarr-python time / inkray time", t_zarr / t_inkray, "x", "target >= 1")
    # The same voxels, both ways: a benchmark of a wrong reader is no benchmark.
    a, b = inkray.load(root, level=0).array, arr[:]
    if not np.array_equal(a, b):
        sys.exit("inkray and zarr-python read different voxels")


def first_frame(root: Path, level: str) -> None:
    args = [program(), "--headless", "--frames", "1", "--warmup", "0", "--level", level, str(root)]
    subprocess.run(args, capture_output=True)  # the page cache warm
    t = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        print(done.stderr)
        sys.exit(f"inkray --headless --level {level} failed")
    chosen = re.search(r"level (\d+) of \d+ \([^)]*\)", done.stderr)
    device = "cpu" if "CPU reference renderer" in done.stderr else "gpu"
    note = f"device {device}" + (f", {chosen.group(0)}" if chosen else "")
    report("headless", f"start to first frame, --level {level}", wall, "s", note + (", target <= 2.5 s" if level == "0" else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--dir", default="/tmp/inkray-zarr-bench")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--csv")
    o = ap.parse_args()
    try:
        import numcodecs  # noqa: F401
        import zarr  # noqa: F401
    except ImportError:
        sys.exit("zarr_bench: needs zarr-python 3 and numcodecs (pip install 'zarr>=3' numcodecs)")
    root = Path(o.dir) / f"fractal_{o.size}.ome.zarr"
    make_image(root, o.size)
    decode(root, o.size, o.repeats)
    first_frame(root, "0")
    first_frame(root, "auto")
    if o.csv:
        with open(o.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["part", "case", "value", "unit", "note"])
            w.writerows(ROWS)


if __name__ == "__main__":
    main()
