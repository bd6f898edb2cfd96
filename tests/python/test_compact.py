"""inkray.compact and inkray.remove: every method against a NumPy reference, on NumPy arrays
(the CPU fallback) and on CuPy and PyTorch device arrays (GPU tests, skipped without a device).
Methods that do not keep the input order are compared as sorted multisets, plus the count."""

from __future__ import annotations

import numpy as np
import pytest

import inkray

METHODS = [m["name"] for m in inkray.compaction_methods()]
STABLE = {m["name"]: m["stable"] for m in inkray.compaction_methods()}
SIZES = [0, 1, 1000, 100_003, 1 << 20]


def stream(n: int, kept: float, seed: int):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    flags = (rng.random(n) < kept).astype(np.uint8)
    return values, flags


def removal_list(n: int, k: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n)[:k].astype(np.uint32)


def same(result: np.ndarray, expected: np.ndarray, method: str) -> None:
    assert len(result) == len(expected)
    if STABLE[method]:
        np.testing.assert_array_equal(result, expected)
    else:
        np.testing.assert_array_equal(np.sort(result), np.sort(expected))


def test_methods_are_the_libraries_five():
    assert METHODS == ["ink-compact", "ink-collate", "thrust", "jumping-jack", "redzone"]


@pytest.mark.parametrize("method", METHODS)
def test_numpy_compact_and_remove(method):
    values, flags = stream(10_000, 0.3, 1)
    np.testing.assert_array_equal(inkray.compact(values, flags, method), values[flags != 0])
    np.testing.assert_array_equal(inkray.compact(values.view(np.float32), flags.astype(bool), method),
                                  values.view(np.float32)[flags != 0])
    out, count = np.zeros_like(values), np.zeros(1, np.uint32)
    assert inkray.compact(values, flags, method, out=out, count=count) is out
    assert count[0] == flags.sum() and np.array_equal(out[: count[0]], values[flags != 0])
    remove = removal_list(len(values), 777, 2)
    work = values.copy()
    kept = inkray.remove(work, remove, method)
    np.testing.assert_array_equal(kept, np.delete(values, remove))
    assert np.shares_memory(kept, work)


# ---- GPU: CuPy and PyTorch ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", SIZES)
def test_cupy_compact_equals_numpy(cupy, method, n):
    values, flags = stream(n, 0.37, n)
    result = inkray.compact(cupy.asarray(values), cupy.asarray(flags), method)
    assert isinstance(result, cupy.ndarray) and result.dtype == cupy.uint32
    same(cupy.asnumpy(result), values[flags != 0], method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", SIZES)
def test_cupy_remove_equals_numpy(cupy, method, n):
    values, _ = stream(n, 0, n)
    k = n // 3
    remove = removal_list(n, k, n + 1)
    data = cupy.asarray(values)
    kept = inkray.remove(data, cupy.asarray(remove), method)
    assert isinstance(kept, cupy.ndarray) and len(kept) == n - k
    assert kept.data.ptr == data.data.ptr, "remove works in place"
    same(cupy.asnumpy(kept), np.delete(values, remove), method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", SIZES)
def test_torch_compact_and_remove_equal_numpy(torch_cuda, method, n):
    torch = torch_cuda
    values, flags = stream(n, 0.61, n + 2)
    signed = values.view(np.int32)  # PyTorch's 32-bit integers are signed: the bits are the same
    result = inkray.compact(torch.from_numpy(signed).cuda(), torch.from_numpy(flags.astype(bool)).cuda(), method)
    assert isinstance(result, torch.Tensor) and result.is_cuda and result.dtype == torch.int32
    same(result.cpu().numpy(), signed[flags != 0], method)
    k = n // 5
    remove = removal_list(n, k, n + 3).astype(np.int64)  # PyTorch indexes with int64
    data = torch.from_numpy(signed.copy()).cuda()
    kept = inkray.remove(data, torch.from_numpy(remove).cuda(), method)
    assert kept.data_ptr() == data.data_ptr() and len(kept) == n - k
    same(kept.cpu().numpy(), np.delete(signed, remove), method)


@pytest.mark.parametrize("method", METHODS)
def test_cupy_on_a_non_default_stream_with_a_device_count(cupy, method):
    values, flags = stream(1 << 18, 0.5, 7)
    stream_ = cupy.cuda.Stream(non_blocking=True)
    with stream_:
        v, f = cupy.asarray(values), cupy.asarray(flags)
        out = cupy.empty_like(v)
        count = cupy.zeros(1, dtype=cupy.uint32)
        assert inkray.compact(v, f, method, out=out, count=count) is out
        n = int(count.get(stream=stream_)[0])
    stream_.synchronize()
    same(cupy.asnumpy(out[:n]), values[flags != 0], method)


def test_cuda_array_interface_only_objects(cupy):
    class CAIOnly:
        def __init__(self, a):
            self.a = a
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    values, flags = stream(50_000, 0.2, 9)
    v, f = cupy.asarray(values), cupy.asarray(flags)
    out = cupy.empty_like(v)
    result = inkray.compact(CAIOnly(v), CAIOnly(f), "ink-compact", out=out)
    np.testing.assert_array_equal(cupy.asnumpy(result), values[flags != 0])


def test_device_errors(cupy):
    v = cupy.arange(10, dtype=cupy.uint32)
    with pytest.raises(ValueError, match="32-bit elements"):
        inkray.compact(v.astype(cupy.float64), cupy.ones(10, cupy.uint8))
    with pytest.raises(ValueError, match="one byte per element"):
        inkray.compact(v, cupy.ones(10, cupy.int32))
    with pytest.raises(ValueError, match="host memory"):
        inkray.compact(v, np.ones(10, np.uint8))
    with pytest.raises(ValueError, match="not contiguous"):
        inkray.compact(cupy.arange(20, dtype=cupy.uint32)[::2], cupy.ones(10, cupy.uint8))
    with pytest.raises(ValueError, match="listed more than once"):
        inkray.remove(v, cupy.asarray([3, 3], dtype=cupy.uint32))
    with pytest.raises(ValueError, match="outside 0..9"):
        inkray.remove(v, cupy.asarray([12], dtype=cupy.uint32))
    # Unchecked, Redzone's kernels still see an index out of range and say so.
    with pytest.raises(ValueError, match="remove"):
        inkray.remove(v, cupy.asarray([12], dtype=cupy.uint32), "redzone", check=False)
