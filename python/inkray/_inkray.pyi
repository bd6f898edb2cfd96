"""Type stubs of the extension module inkray._inkray (python/src). The public API is the package
around it (inkray/__init__.py), which has its own annotations."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

version: str

class HostBuffer:
    """Host memory owned by inkray, shown through the buffer protocol (numpy.asarray wraps it)."""

    @property
    def nbytes(self) -> int: ...

class DeviceArray:
    """Device memory owned by inkray, exported without a copy through __cuda_array_interface__
    and __dlpack__."""

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def ptr(self) -> int: ...
    @property
    def device_id(self) -> int: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def copy_to_host(self) -> HostBuffer: ...

class Renderer:
    def __init__(
        self,
        volume: Any,
        spacing: Optional[Sequence[float]] = None,
        *,
        device: Optional[str] = None,
        threads: int = 0,
        snapshot: bool = True,
        stream: Optional[int] = None,
    ) -> None: ...
    def render(
        self,
        *,
        width: int,
        height: int,
        iso: Optional[float] = None,
        surfaces: Optional[Sequence[Tuple[float, float, float, float, float]]] = None,
        camera: Optional[tuple] = None,
        clip_box: Optional[Sequence[float]] = None,
        clip_plane: Optional[Sequence[float]] = None,
        pipeline: str = "single",
        method: str = "ink-compact",
        color_by: str = "surface",
        colormap: str = "viridis",
        color_range: Optional[Sequence[float]] = None,
        refine: str = "exact",
        stage_timing: bool = False,
        output: str = "numpy",
        depth: bool = False,
        tail_rays: Optional[int] = None,
        ao: int = 0,
        ao_radius: float = 0.0,
        shadows: bool = False,
        light: Optional[Sequence[float]] = None,
        accumulate: int = 1,
        step: float = 0.0,
    ) -> Tuple[Any, Dict[str, Any], Optional[HostBuffer]]: ...
    def set_color_volume(self, volume: Any) -> None: ...
    def suggested_isovalues(self) -> List[float]: ...
    @property
    def device(self) -> str: ...
    @property
    def dims(self) -> Tuple[int, int, int]: ...
    @property
    def spacing_xyz(self) -> Tuple[float, float, float]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def c_order(self) -> bool: ...

class Extractor:
    """Only in builds with the extraction module (extract/)."""

    def __init__(self, device: str = "gpu", *, cuda_device: int = 0, threads: int = 0) -> None: ...
    def set_grid(self, volume: Any, spacing: Optional[Sequence[float]] = None, *, stream: Optional[int] = None) -> None: ...
    def extract(
        self, isovalue: float, *, method: str = "ink-compact", output: str = "numpy", values: str = "isovalue",
        array_axes: bool = False, ascent: bool = False,
        allocate: Optional[Callable[..., Any]] = None, stream: Optional[int] = None,
    ) -> Tuple[Any, ...]:
        """(positions, normals, values, triangles, stats); output='caller': allocate(V, F) returns the four
        arrays; output='buffer': allocate(nbytes) returns one array, and the result is (buffer, layout,
        stats), layout ((offset, shape, dtype) of the four arrays in it)."""
        ...
    @property
    def device(self) -> str: ...
    def release_grid(self) -> None: ...
    @property
    def cuda_device(self) -> int: ...
    @property
    def stream(self) -> int: ...

def load(
    path: str,
    *,
    shape: Optional[Sequence[int]] = None,
    dtype: Optional[str] = None,
    endian: Optional[str] = None,
    spacing: Optional[Sequence[float]] = None,
    series: Optional[str] = None,
    array: Optional[str] = None,
    region_offset: Optional[Sequence[int]] = None,
    region_size: Optional[Sequence[int]] = None,
    header_only: bool = False,
    level: int = 0,
    channel: int = 0,
    time_step: int = 0,
) -> Dict[str, Any]: ...
def builtin_names() -> List[str]: ...
def builtin_isovalue(source: str) -> float: ...
def parse_color(word: str) -> Tuple[float, float, float]: ...
def color_names() -> List[str]: ...
def surface_default_color(index: int) -> Tuple[float, float, float]: ...
def pipelines() -> List[Dict[str, str]]: ...
def colormaps() -> List[str]: ...
def cuda_device_count() -> int: ...
def compact(
    values: Any, flags: Any, out: Any, method: str = "ink-compact", *, count: Any = None, stream: Optional[int] = None
) -> Optional[int]: ...
def remove(
    values: Any, indices: Any, method: str = "redzone", *, count: Any = None, stream: Optional[int] = None
) -> Optional[int]: ...
def hold_gpu(microseconds: int, stream: Optional[int] = None) -> None: ...
def compaction_methods() -> List[Dict[str, Any]]: ...
