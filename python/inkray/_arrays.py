"""Which array library an argument comes from, on which device, and its current CUDA stream.

The extension module reads any array through the buffer protocol, DLPack or
``__cuda_array_interface__``; this module only decides what to hand back (an array of the
caller's library) and on which stream to work (the caller's current one), without importing
CuPy or PyTorch unless the caller's array is one of theirs.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

_KDL_CUDA = 2
_KDL_CUDA_MANAGED = 13


def library_of(obj: Any) -> str:
    """'numpy', 'cupy', 'torch' or 'other', from the type's top-level module."""
    if isinstance(obj, np.ndarray):
        return "numpy"
    module = type(obj).__module__.split(".", 1)[0]
    return module if module in ("cupy", "torch") else "other"


def on_device(obj: Any) -> bool:
    """True for arrays in CUDA device memory (DLPack device CUDA or managed, or CAI)."""
    if isinstance(obj, np.ndarray):
        return False
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is not None:
        try:
            kind, _ = dlpack_device()
            return int(kind) in (_KDL_CUDA, _KDL_CUDA_MANAGED)
        except (TypeError, ValueError, RuntimeError):
            pass
    try:
        return getattr(obj, "__cuda_array_interface__", None) is not None
    except (AttributeError, RuntimeError, TypeError):
        return False


def current_stream(obj: Any) -> Optional[int]:
    """The caller's current CUDA stream for obj's device (a cudaStream_t as int; 0 is the legacy
    default stream), or None for host arrays and libraries without a notion of one."""
    lib = library_of(obj)
    if lib == "cupy":
        import cupy

        return int(cupy.cuda.get_current_stream(obj.device.id).ptr)
    if lib == "torch" and getattr(obj, "is_cuda", False):
        import torch

        return int(torch.cuda.current_stream(obj.device).cuda_stream)
    return None


def empty_like(obj: Any, n: Optional[int] = None) -> Any:
    """An uninitialised 1-D array of obj's library, dtype and device (n elements, default len(obj))."""
    count = len(obj) if n is None else n
    lib = library_of(obj)
    if lib == "cupy":
        import cupy

        with cupy.cuda.Device(obj.device.id):
            return cupy.empty(count, dtype=obj.dtype)
    if lib == "torch":
        import torch

        return torch.empty(count, dtype=obj.dtype, device=obj.device)
    raise TypeError(
        f"cannot allocate an output like a {type(obj).__module__}.{type(obj).__name__}: "
        "pass out= (a device array of the same length)"
    )


def as_library(device_array: Any, like: Any) -> Any:
    """A device array of like's library viewing device_array's memory (no copy); device_array
    itself when like's library is neither CuPy nor PyTorch."""
    lib = library_of(like)
    if lib == "cupy":
        import cupy

        return cupy.asarray(device_array)
    if lib == "torch":
        import torch

        return torch.from_dlpack(device_array)
    return device_array


def to_uint32_indices(indices: Any) -> Any:
    """indices as a 32-bit integer array of its own library (CuPy and PyTorch index with int64)."""
    name = str(getattr(indices, "dtype", ""))
    if name.endswith("int32"):
        return indices
    lib = library_of(indices)
    if lib == "torch":
        import torch

        return indices.to(torch.int32)
    return indices.astype("uint32")


def check_indices(indices: Any, n: int) -> None:
    """ValueError unless every index lies in 0..n-1 and none is listed twice (on the device, with
    the caller's library: a few reductions and one read-back)."""
    k = len(indices)
    if k == 0:
        return
    lib = library_of(indices)
    if lib == "torch":
        import torch

        lo, hi = int(indices.min().item()), int(indices.max().item())
        distinct = int(torch.unique(indices).numel())
    else:
        xp = np
        if lib == "cupy":
            import cupy as xp  # type: ignore[no-redef]
        lo, hi = int(indices.min()), int(indices.max())
        distinct = int(xp.unique(indices).size)
    if lo < 0 or hi >= n:
        raise ValueError(f"indices: {lo if lo < 0 else hi} is outside 0..{n - 1} (the values' positions)")
    if distinct != k:
        raise ValueError(f"indices: {k - distinct} of the {k} indices are listed more than once; list each once")


def device_copy(device_array: Any, like: Any) -> Any:
    """A new array of like's library (CuPy when like is a host array and CuPy is installed, else
    PyTorch) holding a copy of an inkray DeviceArray, on the current stream."""
    lib = library_of(like)
    if lib not in ("cupy", "torch"):
        try:
            import cupy  # noqa: F401

            lib = "cupy"
        except ImportError:
            try:
                import torch  # noqa: F401

                lib = "torch"
            except ImportError:
                raise ValueError("output='device' needs CuPy or PyTorch to hold the arrays") from None
    if lib == "cupy":
        import cupy

        return cupy.asarray(device_array).copy()
    import torch

    return torch.from_dlpack(device_array).clone()


def to_numpy(array: Any) -> np.ndarray:
    """A host NumPy array of a NumPy, CuPy or PyTorch array (a copy from the device)."""
    lib = library_of(array)
    if lib == "cupy":
        return array.get()
    if lib == "torch":
        return array.detach().cpu().numpy()
    return np.asarray(array)


def reverse_columns(array: Any) -> Any:
    """array[:, ::-1] (a view where the library has negative strides; PyTorch copies)."""
    if library_of(array) == "torch":
        return array.flip(1)
    return array[:, ::-1]


def value_range(volume: Any) -> tuple:
    """(min, max) of a NumPy, CuPy or PyTorch array, NaN ignored."""
    lib = library_of(volume)
    if lib == "torch":
        import torch

        finite = volume[~torch.isnan(volume)] if volume.is_floating_point() else volume
        return float(finite.min().item()), float(finite.max().item())
    if lib == "cupy":
        import cupy

        return float(cupy.nanmin(volume)), float(cupy.nanmax(volume))
    a = np.asarray(volume)
    return float(np.nanmin(a)), float(np.nanmax(a))


def as_float32(volume: Any) -> Any:
    """volume converted to float32 with its own library (a copy)."""
    if library_of(volume) == "torch":
        import torch

        return volume.to(torch.float32)
    if library_of(volume) == "cupy":
        return volume.astype("float32")
    return np.asarray(volume, dtype=np.float32)


class _Ops:
    """The few array operations local_values_on_device needs, for CuPy, PyTorch or NumPy."""

    def __init__(self, like: Any):
        self.torch = library_of(like) == "torch"
        if self.torch:
            import torch

            self.xp, self.device = torch, like.device
        elif library_of(like) == "cupy":
            import cupy

            self.xp, self.device = cupy, None
        else:
            self.xp, self.device = np, None

    def asarray(self, a: Any, dtype: str) -> Any:
        if self.torch:
            tensor = a if library_of(a) == "torch" else self.xp.from_dlpack(np.ascontiguousarray(a))
            return tensor.to(device=self.device, dtype=getattr(self.xp, dtype))
        return self.xp.asarray(a, dtype=dtype)

    def arange3(self) -> Any:
        return self.xp.arange(3, device=self.device) if self.torch else self.xp.arange(3)

    def round(self, a: Any) -> Any:
        return self.xp.round(a) if self.torch else self.xp.rint(a)

    def argmax(self, a: Any) -> Any:
        return self.xp.argmax(a, dim=1) if self.torch else self.xp.argmax(a, axis=1)

    def all(self, a: Any) -> Any:
        return a.all(dim=1) if self.torch else a.all(axis=1)

    def int64(self, a: Any) -> Any:
        return a.to(self.xp.int64) if self.torch else a.astype(self.xp.int64)


def local_values_on_device(volume: Any, positions: Any, level: float, spacing_xyz: tuple, c_order: bool) -> Any:
    """scikit-image's vertex values on the device (see local_values in python/src/py_extract.c):
    the largest value range, max(level, corner max) - min(level, corner min), of the up to four
    cells around each vertex's grid edge. positions (V, 3) are x, y, z in world units, origin 0;
    the volume is read in memory order (x fastest), whichever its array order."""
    ops = _Ops(positions)
    xp = ops.xp
    vol = ops.asarray(volume, "float64")
    flat = (vol if c_order else vol.permute(2, 1, 0) if ops.torch else vol.transpose(2, 1, 0)).reshape(-1)
    shape = tuple(vol.shape)
    dims = shape[::-1] if c_order else shape  # x, y, z
    t = ops.asarray(positions, "float64") / ops.asarray(np.asarray(spacing_xyz), "float64")
    frac = t - xp.floor(t)
    axis = ops.argmax(xp.minimum(frac, 1.0 - frac))
    columns = ops.arange3()[None, :]
    along = columns == axis[:, None]
    at = ops.int64(xp.where(along, xp.floor(t), ops.round(t)))
    side_b = columns == ((axis + 1) % 3)[:, None]
    side_c = columns == ((axis + 2) % 3)[:, None]
    top = ops.asarray(np.asarray(dims) - 2, "int64")
    largest = xp.zeros_like(t[:, 0])
    for ob in (-1, 0):
        for oc in (-1, 0):
            cell = at + ob * ops.int64(side_b) + oc * ops.int64(side_c)
            inside = ops.all((cell >= 0) & (cell <= top))
            cell = xp.minimum(xp.maximum(cell, xp.zeros_like(cell)), xp.maximum(top, xp.zeros_like(top)))
            lo = xp.full_like(largest, level)
            hi = xp.full_like(largest, level)
            for corner in range(8):
                x = cell[:, 0] + (corner & 1)
                y = cell[:, 1] + ((corner >> 1) & 1)
                z = cell[:, 2] + ((corner >> 2) & 1)
                value = flat[x + dims[0] * (y + dims[1] * z)]
                lo, hi = xp.minimum(lo, value), xp.maximum(hi, value)
            largest = xp.where(inside, xp.maximum(largest, hi - lo), largest)
    return largest.to(xp.float32) if ops.torch else largest.astype(xp.float32)
