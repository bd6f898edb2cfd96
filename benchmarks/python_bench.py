#!/usr/bin/env python3
"""The Python package against its baselines, each measured in the same run:

1. inkray.marching_cubes on the builtin fractal (256^3 and 512^3, iso 127.5) against
   scikit-image's marching_cubes (lewiner and lorensen), on the GPU with NumPy and with device
   arrays returned, and on the CPU path with all cores;
2. Renderer frames/s from Python against the program's headless run (the C benchmark) of the
   same volume, size and views;
3. inkray.compact on CuPy arrays against the compaction library called from C (`inkray
   compact-bench`), timed the same way: the median of 25 runs after 3 warm-ups, CUDA events
   around the call, each run queued behind a short kernel that holds the GPU (as compact-bench
   does), and also started on an idle GPU (compact-bench --idle).

Every figure is a median of repeats; the ratios printed are baseline / inkray for marching cubes
(speed-ups) and Python / C time for rendering and compaction (overheads: 1.1 is the target). Parts that need what is missing (a GPU, CuPy, scikit-image) say so and
are skipped. Usage: python benchmarks/python_bench.py [--quick] [--sizes 256,512] [--csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import inkray

ROWS = []  # (part, case, figure, unit, baseline, ratio) for --csv


def program() -> str:
    return os.environ.get("INKRAY_BINARY") or str(inkray.binary_path())


def row(part: str, case: str, value: float, unit: str, baseline: str = "", ratio: float = float("nan")) -> None:
    ROWS.append((part, case, value, unit, baseline, ratio))
    tail = f"   {ratio:8.2f}x {baseline}" if baseline else ""
    print(f"  {case:<52} {value:12.3f} {unit:<6}{tail}", flush=True)


def median_time(fn, repeats: int, warmup: int = 1) -> float:
    """Median wall time of fn() in ms (fn synchronises whatever it starts)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def gpu_ready() -> bool:
    return inkray.cuda_device_count() > 0


# ---- 1. marching cubes ------------------------------------------------------------------------------


def bench_marching_cubes(sizes, quick: bool) -> None:
    print("\n== marching cubes: inkray.marching_cubes against scikit-image (builtin fractal, iso 127.5) ==")
    if not hasattr(inkray._inkray, "Extractor"):
        print("  skipped: this build has no extraction module (extract/)")
        return
    try:
        from skimage import measure
    except ImportError:
        print("  skipped: scikit-image is not installed (pip install scikit-image)")
        return
    for n in sizes:
        volume = inkray.load(f"builtin:fractal:{n}").array
        print(f"-- {n}^3 ({volume.nbytes / 2**20:.0f} MiB uint8), {os.cpu_count()} CPU cores")
        sk_repeats = 1 if n >= 512 or quick else 3
        sk = {}
        for method in ("lewiner", "lorensen"):
            sk[method] = median_time(lambda: measure.marching_cubes(volume, 127.5, method=method), sk_repeats, warmup=0)
            row("marching_cubes", f"{n}^3 scikit-image {method}", sk[method], "ms")
        verts, faces, _, _ = measure.marching_cubes(volume, 127.5, method="lorensen")
        print(f"     scikit-image lorensen: {len(verts)} vertices, {len(faces)} triangles")
        # (label, device, volume, output, values, repeats)
        cases = [("cpu, NumPy in and out", "cpu", volume, "numpy", "local", 3)]
        if gpu_ready():
            cases.append(("gpu, NumPy in and out", "gpu", volume, "numpy", "local", 10))
            try:
                import cupy

                on_gpu = cupy.asarray(volume)
                cases.append(("gpu, CuPy in and out", "gpu", on_gpu, "device", "local", 20))
                cases.append(("gpu, CuPy in and out, values='isovalue'", "gpu", on_gpu, "device", "isovalue", 20))
            except ImportError:
                print("     (CuPy is not installed: no device-array case)")
        for label, device, data, output, values, repeats in cases:
            def run():
                result = inkray.marching_cubes(data, 127.5, device=device, output=output, values=values)
                if output == "device":
                    _sync_device(result[0])
                return result

            ms = median_time(run, repeats)
            ours = run()
            row("marching_cubes", f"{n}^3 inkray {label}", ms, "ms", "vs scikit-image lewiner", sk["lewiner"] / ms)
            row("marching_cubes", f"{n}^3 inkray {label}", ms, "ms", "vs scikit-image lorensen", sk["lorensen"] / ms)
            print(f"     inkray {label}: {len(ours[0])} vertices, {len(ours[1])} triangles")


def _sync_device(array) -> None:
    lib = type(array).__module__.split(".")[0]
    if lib == "cupy":
        import cupy

        cupy.cuda.get_current_stream().synchronize()
    elif lib == "torch":
        import torch

        torch.cuda.synchronize()


# ---- 2. rendering -------------------------------------------------------------------------------------


def bench_renderer(quick: bool) -> None:
    print("\n== Renderer: frames/s from Python against the program's headless run (builtin:fractal:256, iso 127.5) ==")
    if not gpu_ready():
        print("  skipped: no CUDA device")
        return
    size, orbit, frames, warmup = (1024, 1024), 8, (40 if quick else 200), 5
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "frames.csv"
        subprocess.run([program(), "--headless", "--device", "gpu", "--size", f"{size[0]}x{size[1]}", "--frames",
                        str(frames), "--warmup", str(warmup), "--orbit", str(orbit), "--iso", "127.5", "--no-stages",
                        "--quiet", "--csv", str(table), "builtin:fractal:256"], check=True, capture_output=True)
        with open(table) as f:
            c_ms = statistics.median(float(r["frame_ms"]) for r in csv.DictReader(f) if r["pass"] == "timed")
    row("render", "C headless: median frame_ms", c_ms, "ms")
    row("render", "C headless: frames/s (1000 / median)", 1000.0 / c_ms, "fps")
    renderer = inkray.Renderer(inkray.load("builtin:fractal:256").array, device="gpu")
    views = [inkray.Orbit(azimuth=360.0 * v / orbit) for v in range(orbit)]
    for output in ("device", "numpy"):
        for f in range(warmup):
            renderer.render(127.5, size=size, camera=views[f % orbit], output=output)
        walls, inner = [], []
        for f in range(frames):
            start = time.perf_counter()
            frame = renderer.render(127.5, size=size, camera=views[f % orbit], output=output)
            walls.append((time.perf_counter() - start) * 1e3)
            inner.append(frame.timings["frame_ms"])
        wall, own = statistics.median(walls), statistics.median(inner)
        row("render", f"Python {output} image: the renderer's frame_ms", own, "ms", "Python / C time", own / c_ms)
        row("render", f"Python {output} image: frames/s, wall clock of render()", 1000.0 / wall, "fps",
            "Python / C time", wall / c_ms)


# ---- 3. compaction ----------------------------------------------------------------------------------


def bench_compact(quick: bool) -> None:
    print("\n== compact on CuPy arrays against the library called from C (inkray compact-bench), 50% kept ==")
    if not gpu_ready():
        print("  skipped: no CUDA device")
        return
    try:
        import cupy
    except ImportError:
        print("  skipped: CuPy is not installed")
        return
    sizes = [24] if quick else [24, 27]
    runs, warmup, hold_us = 25, 3, 50
    methods = [m["name"] for m in inkray.compaction_methods()]
    c_us = {}
    with tempfile.TemporaryDirectory() as tmp:
        for idle in (False, True):
            table = Path(tmp) / f"c{int(idle)}.csv"
            args = [program(), "compact-bench", "--sizes", ",".join(map(str, sizes)), "--kept", "50", "--runs",
                    str(runs), "--csv", str(table)] + (["--idle"] if idle else [])
            subprocess.run(args, check=True, capture_output=True)
            with open(table) as f:
                for r in csv.DictReader(f):
                    c_us[(idle, int(r["n"]), r["case"])] = float(r["median_us"])
    stream = cupy.cuda.Stream(non_blocking=True)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for log2 in sizes:
        n = 1 << log2
        with stream:
            values = cupy.arange(n, dtype=cupy.uint32)
            flags = (cupy.random.random(n) < 0.5).astype(cupy.uint8)
            out = cupy.empty_like(values)
            count = cupy.zeros(1, dtype=cupy.uint32)
            for method in methods:
                for idle in (False, True):
                    times = []
                    for r in range(warmup + runs):
                        if not idle:
                            inkray._inkray.hold_gpu(hold_us, stream.ptr)
                        start.record(stream)
                        inkray.compact(values, flags, method, out=out, count=count)
                        stop.record(stream)
                        stop.synchronize()
                        if r >= warmup:
                            times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
                    ours = statistics.median(times)
                    theirs = c_us.get((idle, n, method))
                    label = f"2^{log2} {method}, {'idle GPU' if idle else 'queued'}"
                    if theirs:
                        row("compact", label, ours, "us", f"Python / C ({theirs:.1f} us)", ours / theirs)
                    else:
                        row("compact", label, ours, "us")
                wall = median_time(lambda: inkray.compact(values, flags, method), runs, warmup)
                row("compact", f"2^{log2} {method}, sized result (count read back), wall", wall * 1e3, "us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and sizes (a few minutes)")
    parser.add_argument("--sizes", default="256,512", help="fractal sizes for marching cubes (default 256,512)")
    parser.add_argument("--csv", help="also write the figures as CSV")
    parser.add_argument("--only", choices=["marching_cubes", "render", "compact"], help="run one part")
    args = parser.parse_args()
    print(f"inkray {inkray.__version__}, Python {sys.version.split()[0]}, NumPy {np.__version__}, "
          f"{inkray.cuda_device_count()} CUDA device(s), program {program()}")
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.only in (None, "marching_cubes"):
        bench_marching_cubes(sizes, args.quick)
    if args.only in (None, "render"):
        bench_renderer(args.quick)
    if args.only in (None, "compact"):
        bench_compact(args.quick)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["part", "case", "value", "unit", "baseline", "ratio"])
            w.writerows(ROWS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
