#!/usr/bin/env python3
"""The Python package against its baselines, each measured in the same run:

1. inkray.marching_cubes and inkray.Extractor on the builtin fractal (256^3 and 512^3, iso
   127.5) against scikit-image's marching_cubes (lewiner and lorensen), NVIDIA Warp's
   wp.MarchingCubes (device in and out; skipped with a line without warp-lang) and the
   program's own device time for the same extraction (`inkray extract --repeat`): on the GPU
   with NumPy, CuPy and PyTorch in and out (values 'isovalue', the program's, and 'local', the
   default), and on the CPU path with all cores; then where a call's time goes (set_grid, the
   extraction's device time, the binding's wall clock);
2. Renderer frames/s from Python against the program's headless run (the C benchmark) of the
   same volume, size and views;
3. inkray.compact on CuPy arrays against the compaction library called from C (`inkray
   compact-bench`), timed the same way: the median of 25 runs after 3 warm-ups, CUDA events
   around the call, each run queued behind a short kernel that holds the GPU (as compact-bench
   does), and also started on an idle GPU (compact-bench --idle).

Every figure is a median of repeats; the ratios printed are baseline / inkray for marching cubes
(speed-ups), except against the program's device time, and Python / C time for rendering and
compaction (overheads: 1.1 is the target; 1.15 for marching cubes with device arrays). Parts that need what is missing (a GPU, CuPy, scikit-image) say so and
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


# ---- 1. marching cubes ----------------------------------------------------------------------------------


def cli_device_ms(n: int, runs: int) -> float:
    """The program's own device time for the same extraction: `inkray extract --repeat` (CUDA
    events around the extraction to device buffers, its host reads of the counts included, the
    median of `runs` after a warm-up; values = the isovalue, InK-Compact)."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([program(), "extract", f"builtin:fractal:{n}", "--iso", "127.5", "--device", "gpu",
                               "--method", "ink-compact", "--repeat", str(runs), "-o", str(Path(tmp) / "m.ply")],
                              check=True, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "ink-compact":
            return float(words[1])
    raise RuntimeError(f"inkray extract --repeat printed no ink-compact time:\n{done.stdout}")


def warp_marching_cubes(volume: np.ndarray, repeats: int):
    """NVIDIA Warp's marching cubes (warp.geometry.IsoSurfaceMarchingCubes from Warp 1.18 on, else
    wp.MarchingCubes) on the same volume as a float32 device array (Warp reads float32 fields only;
    converted before the clock starts): (median ms, vertices, triangles, what ran), or None with a
    line saying why when Warp is not installed."""
    try:
        import warp as wp
    except ImportError:
        print("     Warp: skipped (pip install warp-lang)")
        return None
    wp.config.quiet = True
    wp.init()
    field = wp.array(volume.astype(np.float32), dtype=wp.float32, device="cuda:0")
    nz, ny, nx = volume.shape
    try:
        import warp.geometry  # noqa: F401  (a submodule: not an attribute until imported)
    except ImportError:
        pass
    iso_surface = getattr(getattr(wp, "geometry", None), "IsoSurfaceMarchingCubes", None)
    if iso_surface is not None:  # Warp 1.18 on: sizes its output itself
        mc = iso_surface(nx=nz, ny=ny, nz=nx)
    else:  # earlier versions: wp.MarchingCubes with capacities
        mc = wp.MarchingCubes(nx=nz, ny=ny, nz=nx, max_verts=volume.size // 8, max_tris=volume.size // 4,
                              device="cuda:0")

    def run():
        mc.surface(field, 127.5)
        wp.synchronize_device("cuda:0")

    ms = median_time(run, repeats)
    name = "geometry.IsoSurfaceMarchingCubes" if iso_surface is not None else "MarchingCubes"
    return ms, int(mc.verts.shape[0]), int(mc.indices.shape[0]) // 3, f"Warp {wp.config.version} wp.{name}"


def bench_marching_cubes(sizes, quick: bool) -> None:
    print("\n== marching cubes: inkray against scikit-image, NVIDIA Warp and the program (builtin fractal, iso 127.5) ==")
    if not hasattr(inkray._inkray, "Extractor"):
        print("  skipped: this build has no extraction module (extract/)")
        return
    try:
        from skimage import measure
    except ImportError:
        measure = None
        print("  scikit-image is not installed (pip install scikit-image): no scikit-image baseline")
    for n in sizes:
        volume = inkray.load(f"builtin:fractal:{n}").array
        print(f"-- {n}^3 ({volume.nbytes / 2**20:.0f} MiB uint8), {os.cpu_count()} CPU cores")
        sk_repeats = 1 if n >= 512 or quick else 3
        base = {}  # baseline name -> ms
        if measure is not None:
            for method in ("lewiner",) if quick else ("lewiner", "lorensen"):
                base[f"scikit-image {method}"] = median_time(
                    lambda: measure.marching_cubes(volume, 127.5, method=method), sk_repeats, warmup=0)
                row("marching_cubes", f"{n}^3 scikit-image {method}", base[f"scikit-image {method}"], "ms")
            if not quick:
                verts, faces, _, _ = measure.marching_cubes(volume, 127.5, method="lorensen")
                print(f"     scikit-image lorensen: {len(verts)} vertices, {len(faces)} triangles")
        if gpu_ready():
            warp = warp_marching_cubes(volume, 20)
            if warp:
                base["Warp"] = warp[0]
                row("marching_cubes", f"{n}^3 NVIDIA {warp[3]}, device in and out", warp[0], "ms")
                print(f"     Warp: {warp[1]} vertices, {warp[2]} triangles (its own welding)")
            base["inkray extract"] = cli_device_ms(n, 20)
            row("marching_cubes", f"{n}^3 inkray extract --repeat 20: device time", base["inkray extract"], "ms")
        library = _device_split(volume) if gpu_ready() else {}
        # (label, device, volume or Extractor, output, values, repeats)
        cases = [] if quick else [("cpu, NumPy in and out", "cpu", volume, "numpy", "local", 3)]
        if gpu_ready():
            if not quick:
                cases.append(("gpu, NumPy in and out", "gpu", volume, "numpy", "local", 10))
            for lib in ("cupy", "torch"):
                try:
                    module = __import__(lib)
                except ImportError:
                    print(f"     ({lib} is not installed: no {lib} case)")
                    continue
                on_gpu = module.asarray(volume) if lib == "cupy" else module.from_numpy(volume).cuda()
                name = "CuPy" if lib == "cupy" else "PyTorch"
                kept = inkray.Extractor(on_gpu)
                for values in ("isovalue", "local"):
                    cases.append((f"gpu, {name} in and out, values='{values}'", "gpu", on_gpu, "device", values, 20))
                    cases.append((f"gpu, {name} in and out, values='{values}', Extractor", "gpu", kept, "device",
                                  values, 20))
        counts = None
        for label, device, data, output, values, repeats in cases:
            def run():
                if isinstance(data, inkray.Extractor):
                    result = data.marching_cubes(127.5, output=output, values=values)
                else:
                    result = inkray.marching_cubes(data, 127.5, device=device, output=output, values=values)
                if output == "device":
                    _sync_device(result[0])
                return result

            ms = median_time(run, repeats)
            ours = run()
            mesh = (len(ours[0]), len(ours[1]))
            if counts is None:
                counts = mesh
                print(f"     inkray: {mesh[0]} vertices, {mesh[1]} triangles")
            elif mesh != counts:
                raise RuntimeError(f"inkray {label}: {mesh} vertices and triangles, other cases {counts}")
            for baseline, theirs in base.items():
                if baseline == "inkray extract":  # an overhead: Python / C time, the program's values only
                    if values == "isovalue" and output == "device":
                        row("marching_cubes", f"{n}^3 inkray {label}", ms, "ms", "Python / program device time",
                            ms / theirs)
                else:
                    row("marching_cubes", f"{n}^3 inkray {label}", ms, "ms", f"vs {baseline}", theirs / ms)
            if output == "device" and values in library:
                row("marching_cubes", f"{n}^3 inkray {label}", ms, "ms", "Python / library device time",
                    ms / library[values])
            if not base:
                row("marching_cubes", f"{n}^3 inkray {label}", ms, "ms")


def _device_split(volume: np.ndarray) -> dict:
    """The library's own device time of the extraction for each kind of values (CUDA events, its
    stats; into its own buffers, as the program times it), returned; and where the time of a call
    goes beside it: the brick ranges of a new grid (set_grid), the extraction's device time and
    the wall clock of the binding's call that writes into a new CuPy buffer (the four arrays of
    output='device' are views of it)."""
    try:
        import cupy
    except ImportError:
        return {}
    impl = inkray._inkray.Extractor("gpu")
    library = {}
    on_gpu = cupy.asarray(volume)
    allocate, stream = inkray._arrays.mesh_allocator("cupy", 0)
    grid_ms = median_time(lambda: (impl.set_grid(on_gpu), cupy.cuda.Device().synchronize()), 10)
    row("marching_cubes", "split: set_grid (brick ranges of a new grid), wall", grid_ms, "ms")
    for values in ("isovalue", "local"):
        own = [impl.extract(127.5, values=values, array_axes=True, output="device")[4]["device_ms"]
               for _ in range(23)][3:]
        library[values] = statistics.median(own)
        row("marching_cubes", f"library device time, values='{values}' (into its own buffers)", library[values],
            "ms")
        device, walls = [], []
        for r in range(23):
            start = time.perf_counter()
            stats = impl.extract(127.5, values=values, array_axes=True, output="buffer", allocate=allocate,
                                 stream=stream)[2]
            if r >= 3:
                walls.append((time.perf_counter() - start) * 1e3)
                device.append(stats["device_ms"])
        row("marching_cubes", f"split: values='{values}': extraction device_ms (CUDA events), into a CuPy buffer",
            statistics.median(device), "ms")
        row("marching_cubes", f"split: values='{values}': the binding's extract() call, wall",
            statistics.median(walls), "ms")
    return library


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
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and sizes; marching cubes: device arrays and scikit-image lewiner only")
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
