"""inkray: GPU isosurface ray casting and stream compaction on NumPy, CuPy and PyTorch arrays.

The functions here run inkray's C libraries (the same code as the ``inkray`` program) on arrays
that are already in memory:

- :func:`render` and :class:`Renderer`: isosurface images of a volume, on the GPU or on the CPU
  reference renderer, as an RGBA array plus the frame's timings;
- :func:`compact` and :func:`remove`: GPU stream compaction with a choice of five methods on
  CuPy and PyTorch arrays, on the caller's stream (NumPy arrays are compacted on the CPU);
- :func:`marching_cubes`: isosurface meshes, a drop-in for scikit-image's, on the GPU or the CPU;
  :class:`Extractor` for repeated meshes of one volume;
- :func:`load`: every volume format the program opens, as a NumPy array.

Volumes are read without a copy wherever they are: any array with the buffer protocol (NumPy),
DLPack (``__dlpack__``: PyTorch, CuPy, JAX) or ``__cuda_array_interface__``, of uint8, int16,
uint16 or float32, C- or Fortran-ordered. inkray stores x fastest, so a C-ordered array's axes
are (z, y, x) and a Fortran-ordered array's (x, y, z); ``spacing`` follows the array's axes.
Everything in the rendered world (camera, clip box, clip plane) is in x, y, z as on the command
line. ``python -m inkray ARGS`` runs the program itself with the same command line.

Errors: bad input raises ValueError, GPU and other run-time failures RuntimeError, with the
program's messages.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _arrays
from . import _inkray

__version__: str = _inkray.version

__all__ = [
    "Camera",
    "Extractor",
    "Frame",
    "Orbit",
    "Renderer",
    "Surface",
    "Volume",
    "binary_path",
    "color_names",
    "colormaps",
    "compact",
    "compaction_methods",
    "cuda_device_count",
    "load",
    "marching_cubes",
    "pipelines",
    "remove",
    "render",
]

Color = Union[str, Sequence[float]]


# ---- Cameras and surfaces ------------------------------------------------------------------------


@dataclass(frozen=True)
class Orbit:
    """A camera on a sphere around the volume's centre, looking at it (the program's orbit).

    ``distance`` 1 fits the whole volume in view; ``up`` is the volume axis shown pointing up
    (``x``, ``y``, ``z``, ``-x``, ``-y``, ``-z``), around which ``azimuth`` turns; ``elevation``
    rises toward it. The default is the program's first view: azimuth 0, elevation 20.
    """

    azimuth: float = 0.0
    elevation: float = 20.0
    distance: float = 1.0
    up: str = "z"

    def _spec(self) -> tuple:
        return ("orbit", float(self.azimuth), float(self.elevation), float(self.distance), str(self.up))


@dataclass(frozen=True)
class Camera:
    """A camera at ``eye`` looking at ``target``, in world units (x, y, z): the volume spans
    [0, size * spacing] along each axis. ``fov_y`` is the vertical field of view in degrees."""

    eye: Tuple[float, float, float]
    target: Tuple[float, float, float]
    up: Tuple[float, float, float] = (0.0, 0.0, 1.0)
    fov_y: float = 45.0

    def _spec(self) -> tuple:
        return ("look", tuple(self.eye), tuple(self.target), tuple(self.up), float(self.fov_y))


@dataclass(frozen=True)
class Surface:
    """An isosurface: its value in data units, its colour (a name such as ``'bone'``, ``'#rrggbb'``
    or an (r, g, b) triple of 0..1; None: the program's palette by position) and its opacity
    (1 opaque; translucent surfaces are composited front to back)."""

    iso: float
    color: Optional[Color] = None
    opacity: float = 1.0


def _rgb(color: Optional[Color], index: int) -> Tuple[float, float, float]:
    if color is None:
        return _inkray.surface_default_color(index)
    if isinstance(color, str):
        return _inkray.parse_color(color)
    rgb = tuple(float(c) for c in color)
    if len(rgb) != 3:
        raise ValueError(f"colour {color!r}: expected a name, '#rrggbb' or three numbers (r, g, b) in 0..1")
    return rgb  # type: ignore[return-value]


def _surface_specs(surfaces: Any) -> List[tuple]:
    """Surface, number, (iso[, color[, opacity]]) or {'iso':..., 'color':..., 'opacity':...} items."""
    if isinstance(surfaces, (Surface, int, float, Mapping)):
        surfaces = [surfaces]
    specs = []
    for i, s in enumerate(surfaces):
        if isinstance(s, Surface):
            iso, color, opacity = s.iso, s.color, s.opacity
        elif isinstance(s, Mapping):
            iso, color, opacity = s["iso"], s.get("color"), s.get("opacity", 1.0)
        elif isinstance(s, (int, float, np.number)):
            iso, color, opacity = s, None, 1.0
        else:
            items = tuple(s)
            if not 1 <= len(items) <= 3:
                raise ValueError(f"surface {i + 1}: expected (iso[, color[, opacity]]), got {s!r}")
            iso = items[0]
            color = items[1] if len(items) > 1 else None
            opacity = items[2] if len(items) > 2 else 1.0
        specs.append((float(iso), *_rgb(color, i), float(opacity)))
    return specs


def _pipeline_and_method(pipeline: Optional[str], method: Optional[str]) -> Tuple[str, str]:
    """The program's rule: the single kernel unless a compaction method asks for an InK pipeline."""
    if pipeline is None:
        pipeline = "single" if method is None else "persistent"
    return pipeline, "ink-compact" if method is None else method


def _camera_spec(camera: Any) -> Optional[tuple]:
    if camera is None:
        return None
    if isinstance(camera, (Orbit, Camera)):
        return camera._spec()
    if isinstance(camera, Mapping):
        return (Camera(**camera) if "eye" in camera else Orbit(**camera))._spec()
    raise ValueError("camera: use inkray.Orbit(azimuth, elevation, distance, up) or inkray.Camera(eye, target, up, fov_y)")


# ---- Rendering ---------------------------------------------------------------------------------------


class Frame:
    """One rendered frame: ``image`` (height, width, 4) uint8 RGBA, row 0 at the top (a NumPy
    array, or a device array with ``output='device'``), ``timings`` (the frame's figures: frame_ms,
    per-stage times with ``stage_timing=True``, iterations, ray counts, ...) and ``depth``
    ((height, width) float32 distances from the eye, +inf on background; None unless asked for).
    Unpacks as ``image, timings = frame``."""

    __slots__ = ("image", "timings", "depth")

    def __init__(self, image: Any, timings: Dict[str, Any], depth: Optional[np.ndarray]):
        self.image = image
        self.timings = timings
        self.depth = depth

    def __iter__(self) -> Iterator[Any]:
        return iter((self.image, self.timings))

    def __repr__(self) -> str:
        shape = getattr(self.image, "shape", None)
        return f"Frame(image shape {shape}, {self.timings.get('frame_ms', 0.0):.3f} ms on the {self.timings.get('device')})"


class Renderer:
    """A renderer that holds one volume for repeated frames.

    On the GPU the volume is uploaded once, into a 3D texture, when the Renderer is made; frames
    after that upload nothing (a slider in a notebook re-renders only). A device array (CuPy,
    PyTorch) is read once through the host, where inkray computes the volume's brick ranges. On
    the CPU the renderer works on its own copy of the volume. Either way, later changes to the
    array do not reach the renderer: make a new Renderer for new data.

    ``volume``: a 3-D array (see the module's docstring for the axis order); ``spacing``: voxel
    size along each array axis; ``device``: 'gpu', 'cpu' or None (the GPU when there is one, as
    the program does); ``threads``: CPU renderer threads (0: all cores).
    """

    def __init__(
        self,
        volume: Any,
        spacing: Optional[Sequence[float]] = None,
        *,
        device: Optional[str] = None,
        threads: int = 0,
        _snapshot: bool = True,
    ):
        self._like = volume
        self._impl = _inkray.Renderer(
            volume, spacing, device=device, threads=threads, snapshot=_snapshot, stream=_arrays.current_stream(volume)
        )
        self._suggested: Optional[List[float]] = None
        self._color_source: Any = None

    @property
    def device(self) -> str:
        """'gpu' or 'cpu'."""
        return self._impl.device

    @property
    def dims(self) -> Tuple[int, int, int]:
        """Voxels along x, y, z."""
        return self._impl.dims

    def suggested_isovalues(self) -> List[float]:
        """Isovalues the volume's histogram suggests, best first (the program's default is the first)."""
        if self._suggested is None:
            self._suggested = self._impl.suggested_isovalues()
        return list(self._suggested)

    def set_color_volume(self, volume: Any) -> None:
        """A second volume of the same shape that ``color_by='volume'`` maps through the colour
        map (uploaded now on the GPU); None removes it."""
        self._impl.set_color_volume(volume)
        self._color_source = volume

    def render(
        self,
        iso: Optional[float] = None,
        *,
        size: Tuple[int, int] = (512, 512),
        camera: Union[Orbit, Camera, Mapping[str, Any], None] = None,
        surfaces: Any = None,
        clip_box: Optional[Sequence[float]] = None,
        clip_plane: Optional[Sequence[float]] = None,
        pipeline: Optional[str] = None,
        method: Optional[str] = None,
        color_by: Any = None,
        colormap: str = "viridis",
        color_range: Optional[Sequence[float]] = None,
        refine: str = "exact",
        output: str = "numpy",
        depth: bool = False,
        stage_timing: bool = False,
        tail_rays: Optional[int] = None,
        ao: int = 0,
        ao_radius: Optional[float] = None,
        shadows: bool = False,
        light: Optional[Sequence[float]] = None,
        accumulate: int = 1,
        step: Optional[float] = None,
    ) -> Frame:
        """Renders one frame; see :func:`render` for the arguments."""
        if surfaces is None and iso is None:
            iso = self.suggested_isovalues()[0]
        if color_by is not None and not isinstance(color_by, str):
            if color_by is not self._color_source:
                self.set_color_volume(color_by)
            color_by = "volume"
        width, height = (int(size[0]), int(size[1]))
        pipeline, method = _pipeline_and_method(pipeline, method)
        image, timings, depth_buffer = self._impl.render(
            width=width,
            height=height,
            iso=None if iso is None else float(iso),
            surfaces=None if surfaces is None else _surface_specs(surfaces),
            camera=_camera_spec(camera),
            clip_box=None if clip_box is None else [float(v) for v in clip_box],
            clip_plane=None if clip_plane is None else [float(v) for v in clip_plane],
            pipeline=pipeline,
            method=method,
            color_by=color_by or "surface",
            colormap=colormap,
            color_range=None if color_range is None else [float(v) for v in color_range],
            refine=refine,
            stage_timing=bool(stage_timing),
            output=output,
            depth=bool(depth),
            tail_rays=tail_rays,
            ao=int(ao),
            ao_radius=0.0 if ao_radius is None else float(ao_radius),
            shadows=bool(shadows),
            light=None if light is None else [float(v) for v in light],
            accumulate=int(accumulate),
            step=_sample_step(step),
        )
        if output == "device":
            image = _arrays.as_library(image, self._like)
        else:
            image = np.asarray(image)
        return Frame(image, timings, None if depth_buffer is None else np.asarray(depth_buffer))


def _sample_step(step: Optional[float]) -> float:
    """The renderer's sample_step: 0 for None (its default, half a voxel), else the value, which
    must be positive (the renderer checks the rest of its range)."""
    if step is None:
        return 0.0
    value = float(step)
    if not value > 0.0:
        raise ValueError(f"step {step!r}: voxels between a ray's samples, 0.01 to 1 (None: 0.5)")
    return value


def render(
    volume: Any,
    iso: Optional[float] = None,
    *,
    size: Tuple[int, int] = (512, 512),
    spacing: Optional[Sequence[float]] = None,
    camera: Union[Orbit, Camera, Mapping[str, Any], None] = None,
    surfaces: Any = None,
    clip_box: Optional[Sequence[float]] = None,
    clip_plane: Optional[Sequence[float]] = None,
    pipeline: Optional[str] = None,
    method: Optional[str] = None,
    device: Optional[str] = None,
    threads: int = 0,
    color_by: Any = None,
    colormap: str = "viridis",
    color_range: Optional[Sequence[float]] = None,
    refine: str = "exact",
    output: str = "numpy",
    depth: bool = False,
    stage_timing: bool = False,
    tail_rays: Optional[int] = None,
    ao: int = 0,
    ao_radius: Optional[float] = None,
    shadows: bool = False,
    light: Optional[Sequence[float]] = None,
    accumulate: int = 1,
    step: Optional[float] = None,
) -> Frame:
    """Renders an isosurface image of ``volume``: what ``inkray --headless`` draws.

    Returns a :class:`Frame`: ``image, timings = inkray.render(volume, iso=0.5)``.

    - ``iso``: the isovalue in data units (None: the first isovalue the histogram suggests), or
    - ``surfaces``: up to 4 surfaces drawn together, each an :class:`Surface`, a number, or
      ``(iso, color, opacity)``; colours are names (``inkray.color_names()``), ``'#rrggbb'`` or
      (r, g, b) in 0..1.
    - ``size``: (width, height) in pixels.
    - ``spacing``: voxel size along each array axis (default 1, 1, 1).
    - ``camera``: :class:`Orbit` (default ``Orbit()``: azimuth 0, elevation 20, distance 1) or
      :class:`Camera`, or a dict of either's fields.
    - ``clip_box``: (x0, x1, y0, y1, z0, z1), fractions 0..1 of the volume along x, y, z;
      ``clip_plane``: (nx, ny, nz, d) keeps the world points p with n.p + d >= 0.
    - ``pipeline``: ``'single'`` (one kernel a frame, the fastest), ``'persistent'`` (the InK
      pipeline in one kernel, rays compacted in each block's pool), ``'multi'`` (the InK
      multi-kernel pipeline), ``'paper'`` or ``'plain'`` (``inkray.pipelines()``); ``method``:
      the compaction method of the InK pipelines (``inkray.compaction_methods()``, default
      ``'ink-compact'``). As in the program, None draws with ``'single'``, or with
      ``'persistent'`` when a method is given.
    - ``device``: ``'gpu'``, ``'cpu'`` (the multithreaded reference renderer) or None (the GPU
      when there is one); ``threads``: CPU threads (0: all cores).
    - ``color_by``: None (the surfaces' colours), ``'gradient'`` or an array of the volume's shape,
      mapped through ``colormap`` over ``color_range`` (default: the quantity's range).
    - ``refine``: ``'exact'`` (float trilinear) or ``'texture'`` (8-bit texture weights);
      ``step``: voxels between a ray's samples, 0.01 to 1 (None: 0.5). A surface sliver thinner
      than a step along the ray can fall between two samples; a finer step finds more of them, at
      more samples (docs/render.md, "Crossings").
    - ``output``: ``'numpy'``, or ``'device'`` for the GPU's image buffer without a copy (an array
      of the volume's library when it is CuPy or PyTorch, else an object with
      ``__cuda_array_interface__`` and ``__dlpack__``), valid until the renderer's next frame.
    - ``depth``: also return the depth image; ``stage_timing``: also time each stage (a second,
      diagnostic pass on the GPU); ``tail_rays``: the multi pipeline's tail threshold (None:
      automatic, -1: off).
    - ``ao``: ambient occlusion, that many rays per shaded hit (0: none; up to 256) of ``ao_radius``
      voxels (None: 16); ``shadows``: a shadow ray per shaded hit toward the light; ``light``:
      (azimuth, elevation) in degrees in the camera's frame, a directional light (None: the
      headlight); ``accumulate``: the image is the mean of that many frames of the view, each
      with new occlusion rays. The ``'paper'`` and ``'plain'`` pipelines refuse them with an error.

    For repeated frames of one volume use a :class:`Renderer`, which uploads the volume once.
    """
    renderer = Renderer(volume, spacing, device=device, threads=threads, _snapshot=False)
    return renderer.render(
        iso,
        size=size,
        camera=camera,
        surfaces=surfaces,
        clip_box=clip_box,
        clip_plane=clip_plane,
        pipeline=pipeline,
        method=method,
        color_by=color_by,
        colormap=colormap,
        color_range=color_range,
        refine=refine,
        output=output,
        depth=depth,
        stage_timing=stage_timing,
        tail_rays=tail_rays,
        ao=ao,
        ao_radius=ao_radius,
        shadows=shadows,
        light=light,
        accumulate=accumulate,
        step=step,
    )


# ---- Compaction ----------------------------------------------------------------------------------------


_METHOD_NAMES = tuple(m["name"] for m in _inkray.compaction_methods())


def _check_method(method: str) -> None:
    if method not in _METHOD_NAMES:
        raise ValueError(f"method '{method}': use one of {', '.join(_METHOD_NAMES)}")


def _host_vector(a: Any, what: str) -> np.ndarray:
    array = np.asarray(a)
    if array.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {array.shape}")
    return array


def compact(values: Any, flags: Any, method: str = "ink-compact", *, out: Any = None, count: Any = None) -> Any:
    """The values whose flag is non-zero: ``values[flags != 0]``, by one of the five methods.

    On CuPy and PyTorch device arrays this runs the compaction library on the caller's current
    stream and returns an array of the caller's library: ``values`` of 32-bit elements (uint32,
    int32 or float32; the bits are moved as they are), ``flags`` one byte each (bool or uint8).
    Stable methods keep the input order; the others (``inkray.compaction_methods()`` says which)
    may not. The result is a view of ``out`` (allocated like ``values`` when not given) of the
    kept length, which costs one read-back of the count and so a synchronisation of the stream.
    Given ``count`` (a device array of one uint32), the call only enqueues the work, writes the
    count there and returns all of ``out``.

    NumPy (host) arrays are compacted on the CPU (the result is always in input order).
    """
    _check_method(method)
    if not _arrays.on_device(values):
        v, f = _host_vector(values, "values"), _host_vector(flags, "flags")
        if len(f) != len(v):
            raise ValueError(f"flags has {len(f)} elements, values {len(v)}: they must match")
        kept = v[f.astype(bool, copy=False)]
        if out is None and count is None:
            return kept
        target = np.asarray(out) if out is not None else np.empty_like(v)
        target[: len(kept)] = kept
        if count is not None:
            np.asarray(count)[0] = len(kept)
            return target
        return target[: len(kept)]
    if out is None:
        out = _arrays.empty_like(values)
    n = _inkray.compact(values, flags, out, method, count=count, stream=_arrays.current_stream(values))
    return out if count is not None else out[:n]


def remove(
    values: Any, indices: Any, method: str = "redzone", *, count: Any = None, check: bool = True
) -> Any:
    """Removes the elements at ``indices`` from ``values`` in place and returns the kept ones: a
    view of the first ``len(values) - len(indices)`` elements of ``values``.

    Redzone (the default) does this natively in O(k) work for k indices; the other methods build
    flags and compact. Redzone fills holes with elements from the end, so the kept elements are
    not in input order unless the method is stable. ``indices`` must be distinct and in range:
    with ``check`` (the default) that is verified first (on the device: a few reductions and a
    read-back), since a repeated index outside Redzone's red zone cannot be seen by its kernels.
    Given ``count`` (a device array of one uint32), the call only enqueues the work and returns
    all of ``values``. NumPy arrays are handled on the CPU (always checked), keeping the input
    order.
    """
    _check_method(method)
    n = len(values)
    if not _arrays.on_device(values):
        v = _host_vector(values, "values")
        idx = _host_vector(indices, "indices").astype(np.int64, copy=False)
        _arrays.check_indices(idx, n)
        keep = np.ones(n, dtype=bool)
        keep[idx] = False
        kept = n - len(idx)
        v[:kept] = v[keep]
        if count is not None:
            np.asarray(count)[0] = kept
            return v
        return v[:kept]
    idx = _arrays.to_uint32_indices(indices)
    if check:
        _arrays.check_indices(idx, n)
    left = _inkray.remove(values, idx, method, count=count, stream=_arrays.current_stream(values))
    return values if count is not None else values[:left]


def compaction_methods() -> List[Dict[str, Any]]:
    """The five compaction methods: name, description, in_kernel, stable, in_place."""
    return _inkray.compaction_methods()


# ---- Extraction -------------------------------------------------------------------------------------------

_EXTRACTORS: Dict[tuple, tuple] = {}
_EXTRACTORS_LOCK = threading.Lock()
_EXTRACT_TYPES = ("uint8", "int16", "uint16", "float32")


def _extractor(kind: str, cuda_device: int, threads: int) -> tuple:
    """One extractor (and a lock) per device and thread count, kept for the process: it holds
    the extract module's GPU state, so repeated calls allocate nothing."""
    key = (kind, cuda_device if kind == "gpu" else -1, threads)
    with _EXTRACTORS_LOCK:
        if key not in _EXTRACTORS:
            _EXTRACTORS[key] = (_inkray.Extractor(kind, cuda_device=cuda_device, threads=threads), threading.Lock())
        return _EXTRACTORS[key]


def _check_mc_options(gradient_direction: str, step_size: int, method: str, mask: Any, output: str,
                      values: str) -> None:
    if not hasattr(_inkray, "Extractor"):
        raise RuntimeError("this build of inkray has no extraction module (extract/)")
    if method not in ("lewiner", "lorensen"):
        raise ValueError(f"method '{method}': use 'lewiner' or 'lorensen' (inkray draws both with one table)")
    if gradient_direction not in ("descent", "ascent"):
        raise ValueError(f"gradient_direction '{gradient_direction}': use 'descent' or 'ascent'")
    if step_size != 1:
        raise ValueError(f"step_size {step_size}: inkray extracts at every voxel (step_size=1)")
    if mask is not None:
        raise ValueError("mask is not supported: set the voxels outside the mask below the level instead")
    if output not in ("numpy", "device"):
        raise ValueError(f"output '{output}': use numpy or device")
    if values not in ("local", "isovalue", "gradient"):
        raise ValueError(f"values '{values}': use local, isovalue or gradient")


def _extractable(volume: Any) -> Any:
    """volume, or a float32 copy of it when its dtype is a real type inkray does not read in place."""
    dtype = str(getattr(volume, "dtype", "")).replace("torch.", "")
    if dtype and dtype not in _EXTRACT_TYPES and np.dtype(dtype).kind in "biuf":
        return _arrays.as_float32(volume)
    return volume


def _place(volume: Any, device: Optional[str]) -> Tuple[Any, bool, str, int]:
    """(volume, on_gpu, kind, cuda_device): where the extraction runs and what it reads (a device
    volume comes to the host for the CPU, in the same memory order)."""
    on_gpu = _arrays.on_device(volume)
    kind = device or ("gpu" if on_gpu or cuda_device_count() > 0 else "cpu")
    if kind == "cpu" and on_gpu:
        volume, on_gpu = _arrays.to_numpy(volume), False
    cuda_device = int(volume.__dlpack_device__()[1]) if on_gpu and hasattr(volume, "__dlpack_device__") else 0
    return volume, on_gpu, kind, cuda_device


def _extract_mesh(impl: Any, like: Any, level: float, output: str, compaction: str, values: str,
                  gradient_direction: str) -> Tuple[Any, Any, Any, Any]:
    """One extraction from impl's grid, returned as marching_cubes returns it. Device arrays come
    from the allocator of like's library (CuPy for a host volume, else PyTorch) and are written
    by the extraction itself, on the volume's device."""
    # NumPy output of a device volume comes through the binding's own download (pinned, at the
    # link's speed), not through device arrays copied down by their library.
    to_device = impl.device == "gpu" and output == "device"
    options = dict(method=compaction, values=values, array_axes=True, ascent=gradient_direction == "ascent")
    if to_device:
        # One allocation for the four arrays and one read of its address: each array of its own
        # cost PyTorch tens of microseconds of allocation and DLPack export per call.
        allocate, stream = _arrays.mesh_allocator(_arrays.device_library(like), impl.cuda_device)
        buffer, layout, _ = impl.extract(level, output="buffer", allocate=allocate, stream=stream, **options)
        pos, nrm, val, tri = _arrays.mesh_views(buffer, layout)
    else:
        pos, nrm, val, tri, _ = impl.extract(level, output="numpy", **options)
        pos, nrm, val, tri = (np.asarray(a) for a in (pos, nrm, val, tri))
    if len(tri) == 0:
        raise ValueError(f"no surface at level {level}: the volume's values do not cross it")
    return pos, tri, nrm, val


def marching_cubes(
    volume: Any,
    level: Optional[float] = None,
    *,
    spacing: Sequence[float] = (1.0, 1.0, 1.0),
    gradient_direction: str = "descent",
    step_size: int = 1,
    allow_degenerate: bool = True,
    method: str = "lewiner",
    mask: Any = None,
    device: Optional[str] = None,
    output: str = "numpy",
    compaction: str = "ink-compact",
    values: str = "local",
    threads: int = 0,
) -> Tuple[Any, Any, Any, Any]:
    """The isosurface of ``volume`` at ``level`` as a mesh, like ``skimage.measure.marching_cubes``:
    returns ``verts, faces, normals, values``.

    - ``verts`` (V, 3) float32: vertex positions in the array's axis order, scaled by ``spacing``
      (one per grid edge the surface crosses, shared by the cells around it);
    - ``faces`` (F, 3) int32: triangles indexing ``verts``, wound as scikit-image winds them for
      ``gradient_direction`` ('descent': the object holds the higher values; 'ascent');
    - ``normals`` (V, 3) float32: unit normals from the data's gradient, pointing toward lower
      values (scikit-image's direction), computed in world units (spacing applied);
    - ``values`` (V,) float32: with ``values='local'`` (the default) scikit-image's, the largest
      value range of the cells around the vertex ("the maximum value of the data in the local
      region"), ``'isovalue'`` or ``'gradient'`` (the gradient magnitude): each is computed as
      the extraction writes the vertex.

    It runs inkray's extraction (``extract/``): on the GPU when there is one (``device=None``) or
    the volume is on it, else the CPU reference on all cores (``threads``); both give the same
    mesh. ``compaction`` picks the GPU's compaction method. ``output='device'`` returns CuPy
    arrays or PyTorch tensors (those of the volume; for a NumPy volume CuPy when installed),
    allocated by that library on the volume's device once the mesh's size is known and written
    by the extraction itself (no copy); the call returns once they are complete. Volumes of
    uint8, int16, uint16 and float32 are read in place; other real dtypes are converted to
    float32 first. ``level`` defaults to the middle of the value range, as in scikit-image.

    Each call computes the volume's brick value ranges afresh (one pass over the volume), so it
    always sees the array's current values. For repeated calls on one volume, :class:`Extractor`
    computes them once.

    Differences from scikit-image: one case table ('lewiner' and 'lorensen' give the same mesh,
    the classic Lorensen-Cline table with the ambiguity rule of docs/extract.md), a voxel equal
    to ``level`` counts as inside, vertices are kept at least 1/256 of an edge from a grid point
    (so no triangle is degenerate: ``allow_degenerate`` has nothing to remove), ``step_size``
    must be 1 and ``mask`` is not supported. A level the data does not cross raises ValueError.
    """
    _check_mc_options(gradient_direction, step_size, method, mask, output, values)
    volume = _extractable(volume)
    if level is None:
        lo, hi = _arrays.value_range(volume)
        level = 0.5 * (lo + hi)
    volume, _, kind, cuda_device = _place(volume, device)
    extractor, lock = _extractor(kind, cuda_device, threads)
    with lock:
        extractor.set_grid(volume, spacing, stream=_arrays.current_stream(volume))
        try:
            return _extract_mesh(extractor, volume, float(level), output, compaction, values,
                                 gradient_direction)
        finally:
            extractor.release_grid()  # a cached extractor keeps no volume alive


class Extractor:
    """Marching cubes of one volume, repeated: ``Extractor(volume).marching_cubes(level)`` gives
    what ``marching_cubes(volume, level)`` gives, without computing the volume's brick value
    ranges again at every call (a level slider, a sweep over isovalues).

    The Extractor is a snapshot, as a :class:`Renderer` is: it extracts from the volume as it
    was when given (at construction or :meth:`set_volume`), never from later changes to the
    array, so that its brick ranges cannot go stale. A CuPy or PyTorch volume is copied once on
    its device (the Extractor holds the copy: one more volume's worth of GPU memory), a NumPy
    volume is uploaded once to the GPU (or copied once for the CPU). Call :meth:`set_volume`
    with the changed array to extract from its new values.

    ``volume``, ``spacing``, ``device`` and ``threads`` mean what they mean for
    :func:`marching_cubes`; each Extractor has its own extraction state (scratch buffers, CUDA
    stream), kept between calls. Calls run one at a time per Extractor.
    """

    def __init__(
        self,
        volume: Any,
        spacing: Sequence[float] = (1.0, 1.0, 1.0),
        *,
        device: Optional[str] = None,
        threads: int = 0,
    ):
        if not hasattr(_inkray, "Extractor"):
            raise RuntimeError("this build of inkray has no extraction module (extract/)")
        volume, on_gpu, kind, cuda_device = _place(_extractable(volume), device)
        self._lock = threading.Lock()
        self._impl = _inkray.Extractor(kind, cuda_device=cuda_device, threads=threads)
        self._range: Optional[Tuple[float, float]] = None
        self._like: Any = None
        self._take(volume, on_gpu, spacing)

    @property
    def device(self) -> str:
        """'gpu' or 'cpu'."""
        return self._impl.device

    def set_volume(self, volume: Any, spacing: Sequence[float] = (1.0, 1.0, 1.0)) -> None:
        """Takes a new volume (or the changed values of the same array), as the constructor does;
        on the Extractor's device (a volume on another GPU raises ValueError)."""
        converted = _extractable(volume)
        on_gpu = _arrays.on_device(converted)
        if self.device == "cpu" and on_gpu:
            converted, on_gpu = _arrays.to_numpy(converted), False
        self._take(converted, on_gpu, spacing)

    def _take(self, volume: Any, on_gpu: bool, spacing: Sequence[float]) -> None:
        # What the extractor reads in place is a copy only it holds: device arrays (GPU) and host
        # arrays (CPU). A host array for the GPU is uploaded by set_grid, a copy of its own; its
        # value range (for level=None) is taken now, while it holds the values uploaded.
        kept = on_gpu or self.device == "cpu"
        if kept and _arrays.contiguous(volume):  # else set_grid says what to pass instead
            volume = _arrays.snapshot(volume)
        with self._lock:
            self._impl.set_grid(volume, spacing, stream=_arrays.current_stream(volume))
            self._range = None if kept else _arrays.value_range(volume)
            # The snapshot (for the value range and the library of the device arrays returned);
            # for an uploaded host array only its library matters.
            self._like = volume if kept else np.empty(0, np.float32)

    def marching_cubes(
        self,
        level: Optional[float] = None,
        *,
        gradient_direction: str = "descent",
        step_size: int = 1,
        allow_degenerate: bool = True,
        method: str = "lewiner",
        mask: Any = None,
        output: str = "numpy",
        compaction: str = "ink-compact",
        values: str = "local",
    ) -> Tuple[Any, Any, Any, Any]:
        """``verts, faces, normals, values`` of the volume at ``level``: the arguments and the
        result are :func:`marching_cubes`'s. ``level`` defaults to the middle of the volume's
        value range (computed once)."""
        _check_mc_options(gradient_direction, step_size, method, mask, output, values)
        with self._lock:
            if level is None:
                if self._range is None:
                    self._range = _arrays.value_range(self._like)
                level = 0.5 * (self._range[0] + self._range[1])
            return _extract_mesh(self._impl, self._like, float(level), output, compaction, values,
                                 gradient_direction)


# ---- Loading ---------------------------------------------------------------------------------------------


class Volume(NamedTuple):
    """A loaded volume: ``array`` (z, y, x), C order, x fastest, in the file's type (uint8, int16,
    uint16 or float32); ``spacing`` and ``origin`` (world position of voxel 0) in the same (z, y, x)
    order; ``info``: name, note (what the program would say about the file), modality and
    description (DICOM), up_axis (x/y/z/-x/-y/-z or none) and where it came from, value_range,
    full_shape and region_offset (z, y, x) when a region was read."""

    array: Optional[np.ndarray]
    spacing: Tuple[float, float, float]
    origin: Tuple[float, float, float]
    info: Dict[str, Any]


def load(
    path: Union[str, "os.PathLike[str]"],
    *,
    shape: Optional[Sequence[int]] = None,
    dtype: Any = None,
    endian: Optional[str] = None,
    spacing: Optional[Sequence[float]] = None,
    series: Optional[str] = None,
    array: Optional[str] = None,
    region_offset: Optional[Sequence[int]] = None,
    region_size: Optional[Sequence[int]] = None,
    header_only: bool = False,
    level: Union[int, str] = 0,
    channel: int = 0,
    time_step: int = 0,
) -> Volume:
    """Opens a volume with the program's loader: raw (``name_XxYxZ_type.raw``, ``.raw.gz``, or
    any file with ``shape`` and ``dtype``), NRRD, MetaImage, NIfTI-1, QVis, DICOM series and
    multi-frame files, TIFF stacks, VTK ``.vti``, Zarr v2/v3 arrays and OME-Zarr images (folders),
    HDF5 datasets (``file.h5:/path``, or the file when it holds one 3-D dataset), and
    ``builtin:NAME[:N]`` (sphere, marschner-lobb, fractal).

    The volume options are the program's, in the array's axis order: ``shape`` (z, y, x) and
    ``dtype`` for raw files (``--dims XxYxZ --type``), ``endian`` ('little' or 'big'),
    ``spacing`` (z, y, x), ``series`` (a DICOM SeriesInstanceUID), ``array`` (a .vti point data
    array), ``region_offset`` and ``region_size`` (z, y, x: read only that box), ``header_only``
    (no voxels: ``array`` is None), ``level`` (OME-Zarr: the multiscale level, 0 the finest, or
    'auto': the finest within half the available memory), ``channel`` and ``time_step`` (arrays
    with c and t axes). ``info`` also holds ``level``, ``levels`` (each level's shape and
    spacing, z, y, x), ``steps`` and ``channels``. Returns a :class:`Volume`; unknown or broken
    files raise ValueError with the program's message.
    """
    if level == "auto":
        level = -1
    elif not isinstance(level, int) or isinstance(level, bool) or level < 0:
        raise ValueError(f"level must be 'auto' or a whole number from 0, not {level!r}")
    dtype_name = None if dtype is None else np.dtype(dtype).name
    d = _inkray.load(
        os.fspath(path) if not isinstance(path, str) else path,
        shape=None if shape is None else [int(v) for v in shape],
        dtype=dtype_name,
        endian=endian,
        spacing=None if spacing is None else [float(v) for v in spacing],
        series=series,
        array=array,
        region_offset=None if region_offset is None else [int(v) for v in region_offset],
        region_size=None if region_size is None else [int(v) for v in region_size],
        header_only=header_only,
        level=level,
        channel=channel,
        time_step=time_step,
    )
    voxels = d.pop("voxels")
    data = None if voxels is None else np.asarray(voxels)
    spacing_zyx, origin_zyx = d.pop("spacing"), d.pop("origin")
    return Volume(data, spacing_zyx, origin_zyx, d)


# ---- Names and the program -----------------------------------------------------------------------------


def pipelines() -> List[Dict[str, str]]:
    """The renderers: name and description."""
    return _inkray.pipelines()


def colormaps() -> List[str]:
    """Colour map names for ``colormap=``."""
    return _inkray.colormaps()


def color_names() -> List[str]:
    """Colour names surfaces accept."""
    return _inkray.color_names()


def cuda_device_count() -> int:
    """CUDA devices inkray can use (0 without a driver or GPU: everything runs on the CPU)."""
    return _inkray.cuda_device_count()


def binary_path() -> Path:
    """The ``inkray`` program installed with the package (``python -m inkray`` runs it)."""
    return Path(__file__).resolve().parent / "bin" / "inkray"
