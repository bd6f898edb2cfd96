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


def device_library(like: Any) -> str:
    """The library whose device arrays stand for like's: 'cupy' or 'torch' for theirs, else CuPy
    when it is installed, else PyTorch; ValueError when neither is."""
    lib = library_of(like)
    if lib in ("cupy", "torch"):
        return lib
    for candidate in ("cupy", "torch"):
        try:
            __import__(candidate)
            return candidate
        except ImportError:
            pass
    raise ValueError("output='device' needs CuPy or PyTorch to hold the arrays")


def mesh_allocator(lib: str, device_id: int) -> tuple:
    """(allocate, stream): allocate(nbytes) -> a new uninitialised 1-D uint8 array of lib ('cupy'
    or 'torch') on device_id from the library's allocator, on its current stream there, whose
    cudaStream_t (an int) comes second: the extraction (output='buffer') writes the whole mesh
    into that one array after that stream's work, and :func:`mesh_views` makes its four arrays."""
    if lib == "cupy":
        import cupy

        def allocate_cupy(nbytes: int) -> Any:
            with cupy.cuda.Device(device_id):
                return cupy.empty(nbytes, cupy.uint8)

        return allocate_cupy, int(cupy.cuda.get_current_stream(device_id).ptr)
    import torch

    device = torch.device("cuda", device_id)

    def allocate_torch(nbytes: int) -> Any:
        return torch.empty(nbytes, dtype=torch.uint8, device=device)

    return allocate_torch, int(torch.cuda.current_stream(device).cuda_stream)


def mesh_views(buffer: Any, layout: tuple) -> tuple:
    """The arrays of a mesh written into one buffer (the binding's output='buffer'): for each
    (offset in bytes, shape, dtype) of layout, a C-ordered view of buffer's memory of its library
    (NumPy, CuPy or PyTorch), without a copy. Each view keeps the buffer's memory alive, so the
    arrays are independent of each other and of buffer for the caller (the memory goes when the
    last of them does)."""
    lib = library_of(buffer)
    if lib == "torch":
        import torch

        typed = {"float32": buffer.view(torch.float32), "int32": buffer.view(torch.int32)}
        # as_strided's offset counts from the storage's start, not the tensor's: a buffer that is
        # a slice of a larger tensor starts storage_offset() elements in.
        return tuple(typed[dtype].as_strided(shape, (shape[1], 1) if len(shape) == 2 else (1,),
                                             typed[dtype].storage_offset() + offset // 4)
                     for offset, shape, dtype in layout)
    if lib == "cupy":
        import cupy

        return tuple(cupy.ndarray(shape, dtype, memptr=buffer.data + offset) for offset, shape, dtype in layout)
    return tuple(np.ndarray(shape, dtype, buffer=buffer, offset=offset) for offset, shape, dtype in layout)


def contiguous(volume: Any) -> bool:
    """Whether a NumPy, CuPy or PyTorch array is C- or Fortran-contiguous (other objects: True)."""
    if library_of(volume) == "torch":
        return volume.is_contiguous() or volume.permute(*reversed(range(volume.dim()))).is_contiguous()
    flags = getattr(volume, "flags", None)
    return flags is None or bool(flags.c_contiguous or flags.f_contiguous)


def snapshot(volume: Any) -> Any:
    """A copy of a NumPy, CuPy or PyTorch array in its own library and place, with its memory
    layout (a Fortran-ordered array stays Fortran-ordered: its axes keep their meaning)."""
    lib = library_of(volume)
    if lib == "cupy":
        with volume.device:  # CuPy copies onto the current device
            return volume.copy(order="K")
    if lib == "torch":
        return volume.clone()  # preserve_format: a dense tensor keeps its strides
    return np.array(volume, copy=True, order="K")


def to_numpy(array: Any) -> np.ndarray:
    """A host NumPy array of a NumPy, CuPy or PyTorch array (a copy from the device)."""
    lib = library_of(array)
    if lib == "cupy":
        return array.get()
    if lib == "torch":
        return array.detach().cpu().numpy()
    return np.asarray(array)


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
