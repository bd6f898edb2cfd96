#!/usr/bin/env python3
"""Reading OME-Zarr: inkray against zarr-python on the same array, in the same run.

Makes (once; kept in --dir) an OME-Zarr 0.4 image: N^3 uint8 (default 2048^3, 8 GiB), 128^3
chunks, blosc-lz4 with byte shuffle, 5 levels (level l samples every 2^l-th voxel of the same
field: smooth 3-D waves with a little integer texture, so that blosc compresses it about as much
as real data and isovalue 128 draws surfaces everywhere). Then, with the page cache warm (one run
first):

1. the program, headless, one frame at --level 0: the read ("opened ...: X GiB read in Y s",
   streamed to the GPU while read) in GB/s of voxels, and the first frame after the start
   (targets: >= 6 GB/s, first frame <= 2.5 s); the same at --level auto (which level it took);
2. zarr-python's array[:] of level 0 into NumPy (its thread pool at every core): GB/s, and the
   ratio zarr-python time / inkray's read time (target >= 1); and inkray.load of level 0 when
   the inkray package is importable, checked to read the same voxels as zarr-python.

Needs NumPy, zarr-python 3 and numcodecs; the inkray program from $INKRAY_BINARY (or the
package's). Without a GPU the program runs on the CPU device and says so.
Usage: python benchmarks/zarr_bench.py [--size 2048] [--dir DIR] [--repeats 3] [--csv FILE]
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

try:
    import inkray
except ImportError:  # the program alone is enough for the main figures
    inkray = None

ROWS = []


def program() -> str:
    given = os.environ.get("INKRAY_BINARY")
    if given:
        return given
    if inkray is None:
        sys.exit("zarr_bench: set INKRAY_BINARY to the inkray program (or install the inkray package)")
    return str(inkray.binary_path())


def report(part, case, value, unit, note=""):
    ROWS.append((part, case, value, unit, note))
    print(f"{part:10s} {case:44s} {value:10.3f} {unit:6s} {note}", flush=True)


def field(n: int, step: int, z0: int, z1: int) -> np.ndarray:
    """Voxels [z0, z1) x n x n of level `step` (every step-th voxel of the level-0 field)."""
    c = np.arange(0, n, step, dtype=np.float32)
    cz = np.arange(z0, z1, dtype=np.float32) * step
    w = 2 * np.pi / 97.0
    sx, sy, sz = np.sin(c * w), np.sin(c * w * 1.3 + 1.0), np.sin(cz * w * 0.7 + 2.0)
    ix = c.astype(np.int64)
    plane = 40.0 * (sy[:, None] + sx[None, :]) + ((ix[:, None] * 7 + ix[None, :] * 13) % 5)  # (y, x)
    v = (128.0 + 40.0 * sz + (cz.astype(np.int64) * 3 % 5))[:, None, None] + plane[None, :, :].astype(np.float32)
    return np.clip(v, 0, 255).astype(np.uint8)


def make_image(root: Path, n: int) -> None:
    import numcodecs
    import zarr

    if (root / ".zattrs").exists():
        return
    print(f"writing {root} ({n}^3 uint8, 128^3 chunks, blosc-lz4, 5 levels) ...", flush=True)
    numcodecs.blosc.set_nthreads(os.cpu_count() or 1)
    g = zarr.open_group(str(root), mode="w", zarr_format=2)
    datasets = []
    for level in range(5):
        step = 2**level
        m = (n + step - 1) // step
        a = g.create_array(str(level), shape=(m, m, m), dtype="uint8", chunks=(128, 128, 128),
                           compressors=[numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)])
        for z in range(0, m, 128):
            a[z : z + 128] = field(n, step, z, min(z + 128, m))
        s = float(step)
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


def headless(root: Path, level: str, n: int) -> float:
    """The program's read time (s) at this level; reports the read rate and the first frame."""
    args = [program(), "--headless", "--frames", "1", "--warmup", "0", "--iso", "128", "--level", level, str(root)]
    subprocess.run(args, capture_output=True)  # the page cache warm
    done = subprocess.run(args, capture_output=True, text=True)
    text = done.stdout + done.stderr
    if done.returncode != 0:
        print(text)
        sys.exit(f"inkray --headless --level {level} failed")
    read = re.search(r"opened \S+: ([\d.]+) GiB read in ([\d.]+) s \(([\d.]+) GB/s\)", text)
    first = re.search(r"first frame at ([\d.]+) s", text)
    chosen = re.search(r"level (\d+) of \d+ \([^)]*\)", text)
    device = "cpu" if "CPU reference renderer" in text else "gpu"
    note = f"device {device}" + (f", {chosen.group(0)}" if chosen else "")
    if read:
        report("program", f"--level {level}: read (decode + upload)", float(read.group(3)), "GB/s",
               f"{float(read.group(1)):.2f} GiB in {read.group(2)} s, {note}")
    if first:
        report("program", f"--level {level}: first frame after the start", float(first.group(1)), "s",
               "target <= 2.5 s" if level == "0" else note)
    return float(read.group(2)) if read else float("nan")


def decode(root: Path, n: int, repeats: int, program_read_s: float) -> None:
    import zarr

    nbytes = n**3
    try:
        zarr.config.set({"threading.max_workers": os.cpu_count(), "async.concurrency": 4 * (os.cpu_count() or 1)})
    except Exception as e:  # older zarr-python: its defaults
        print(f"note: zarr config not set ({e})")
    arr = zarr.open_array(str(root / "0"), mode="r")
    t_zarr = timed(lambda: arr[:], repeats)
    report("decode", "zarr-python array[:] level 0", nbytes / t_zarr / 1e9, "GB/s", f"{t_zarr:.3f} s")
    report("decode", "ratio zarr-python / program's read", t_zarr / program_read_s, "x", "target >= 1")
    if inkray is None:
        print("note: the inkray package is not importable: inkray.load not timed")
        return
    t_inkray = timed(lambda: inkray.load(root, level=0), repeats)
    report("decode", f"inkray.load level 0 ({os.cpu_count()} cores)", nbytes / t_inkray / 1e9, "GB/s", f"{t_inkray:.3f} s")
    report("decode", "ratio zarr-python / inkray.load", t_zarr / t_inkray, "x", "target >= 1")
    # The same voxels, both ways: a benchmark of a wrong reader is no benchmark.
    if not np.array_equal(inkray.load(root, level=0).array, arr[:]):
        sys.exit("inkray and zarr-python read different voxels")


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
    root = Path(o.dir) / f"waves_{o.size}.ome.zarr"
    make_image(root, o.size)
    read_s = headless(root, "0", o.size)
    headless(root, "auto", o.size)
    decode(root, o.size, o.repeats, read_s)
    if o.csv:
        with open(o.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["part", "case", "value", "unit", "note"])
            w.writerows(ROWS)


if __name__ == "__main__":
    main()
