"""Bad input raises ValueError with one clear message (the program's, where it has one); a
missing GPU is a RuntimeError; nothing crashes or quietly renders something else."""

from __future__ import annotations

import numpy as np
import pytest

import inkray
from conftest import gpu_available, sphere

GOOD = sphere(16)


@pytest.mark.parametrize(
    "volume, message",
    [
        (np.zeros((4, 4, 4, 2), np.float32), r"must be a 3-D array, got 4-D with shape \(4, 4, 4, 2\)"),
        (np.zeros((4, 4), np.float32), r"must be a 3-D array, got 2-D"),
        (np.zeros((4, 4, 4), np.int32), r"has dtype int32; inkray reads uint8, int16, uint16 and float32"),
        (np.zeros((4, 4, 4), np.float64), r"has dtype float64"),
        (np.zeros((4, 4, 4), np.bool_), r"has dtype bool"),
        (np.zeros((0, 4, 4), np.float32), r"is empty \(shape \(0, 4, 4\)\)"),
        (GOOD[:, ::2, :], r"is not contiguous .* numpy.ascontiguousarray"),
        (GOOD.transpose(1, 0, 2), r"is not contiguous"),
    ],
)
def test_bad_volumes_raise_value_error(volume, message):
    with pytest.raises(ValueError, match=message):
        inkray.render(volume, 0.0, size=(8, 8), device="cpu")
    with pytest.raises(ValueError, match=message):
        inkray.Renderer(volume, device="cpu")


def test_big_endian_arrays_are_refused():
    with pytest.raises(ValueError, match="big-endian"):
        inkray.render(GOOD.astype(">f4"), 0.0, size=(8, 8), device="cpu")


def test_non_arrays_raise_type_error():
    with pytest.raises(TypeError, match="expected an array"):
        inkray.render(object(), 0.0, device="cpu")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"spacing": (1, 1)}, "spacing must be three positive finite numbers"),
        ({"spacing": (1, 0, 1)}, "spacing must be three positive finite numbers"),
        ({"size": (0, 8)}, r"size 0x8: width and height must be 1 or more"),
        ({"size": (20000, 8)}, r"image size 20000x8: width and height must be between 1 and 16384"),
        ({"pipeline": "fast"}, r"pipeline 'fast': use one of multi, single, paper, plain"),
        ({"method": "magic"}, r"method 'magic': use one of ink-compact, ink-collate, thrust, jumping-jack, redzone"),
        ({"clip_box": (0, 1, 0.5, 0.2, 0, 1)}, r"clip_box: y range 0.5..0.2 must lie in 0..1"),
        ({"clip_box": (0, 1)}, r"clip_box: expected six numbers"),
        ({"clip_plane": (0, 0, 0, 1)}, r"clip plane: needs a nonzero normal"),
        ({"surfaces": [(0, "nocolour")]}, r"colour 'nocolour'"),
        ({"surfaces": [(0, "red", 2.0)]}, r"surface 1: colour and opacity must lie between 0 and 1"),
        ({"surfaces": [0, 1, 2, 3, 4]}, r"5 surfaces: a frame draws 1 to 4"),
        ({"camera": inkray.Orbit(elevation=95)}, r"elevation 95 must lie in -89..89"),
        ({"camera": inkray.Orbit(up="w")}, r"camera: up must be one of"),
        ({"camera": "front"}, r"camera: use inkray.Orbit"),
        ({"refine": "smooth"}, r"refine 'smooth'"),
        ({"colormap": "jet", "color_by": "gradient"}, r"colormap 'jet': use one of viridis"),
        ({"color_by": "speed"}, r"color_by 'speed'"),
        ({"color_by": np.zeros((8, 8, 8), np.float32)}, r"colour volume .* is 8x8x8, but the volume is 16x16x16"),
        ({"output": "device"}, r"output='device' needs the GPU renderer"),
        ({"output": "jax"}, r"output 'jax': use numpy or device"),
        ({"device": "tpu"}, r"device must be 'gpu', 'cpu' or None"),
        ({"threads": -1}, r"threads must be 0"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    options = {"size": (8, 8), "device": "cpu", **kwargs}
    with pytest.raises(ValueError, match=message):
        inkray.render(GOOD, 0.0, **options)


def test_non_finite_isovalue():
    with pytest.raises(ValueError, match="iso must be a finite number"):
        inkray.render(GOOD, float("nan"), size=(8, 8), device="cpu")


@pytest.mark.skipif(gpu_available(), reason="checks the message where there is no GPU")
def test_gpu_without_a_device_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"device='gpu': no CUDA device available .*use device='cpu'"):
        inkray.render(GOOD, 0.0, size=(8, 8), device="gpu")


def test_load_errors_are_the_programs(tmp_path):
    with pytest.raises(ValueError, match="no-such-file.nrrd"):
        inkray.load(tmp_path / "no-such-file.nrrd")
    raw = tmp_path / "short_4x4x4_uint8.raw"
    raw.write_bytes(bytes(60))
    with pytest.raises(ValueError, match=r"60 bytes, expected 64 for 4x4x4 uint8"):
        inkray.load(raw)
    with pytest.raises(ValueError, match=r"dtype 'int64'"):
        inkray.load(raw, shape=(4, 4, 4), dtype=np.int64)
    with pytest.raises(ValueError, match=r"shape must be three whole numbers \(z, y, x\)"):
        inkray.load(raw, shape=(4, 4))
    with pytest.raises(ValueError, match=r"endian 'middle'"):
        inkray.load(raw, endian="middle")
    with pytest.raises(ValueError, match="builtin"):
        inkray.load("builtin:teapot")


def test_compaction_errors_on_host_arrays():
    values = np.arange(10, dtype=np.uint32)
    with pytest.raises(ValueError, match="flags has 9 elements, values 10"):
        inkray.compact(values, np.ones(9, np.uint8))
    with pytest.raises(ValueError, match="method 'fastest'"):
        inkray.compact(values, np.ones(10, np.uint8), method="fastest")
    with pytest.raises(ValueError, match=r"values must be 1-D"):
        inkray.compact(values.reshape(2, 5), np.ones((2, 5), np.uint8))
    with pytest.raises(ValueError, match=r"listed more than once"):
        inkray.remove(values.copy(), np.array([1, 1]))
    with pytest.raises(ValueError, match=r"outside 0..9"):
        inkray.remove(values.copy(), np.array([10]))
