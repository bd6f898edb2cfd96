"""The GPU renderer from Python (skipped without a CUDA device): images against the CPU
reference renderer (the program's --verify rule: at most 1% of the pixels differ by more than 8
in a channel), device arrays in and out without copies, and every pipeline and method drawing
the same image."""

from __future__ import annotations

import numpy as np
import pytest

import inkray
from conftest import requires_gpu, sphere

N = 64
SIZE = (160, 120)
pytestmark = requires_gpu


def close_to_cpu(gpu_image: np.ndarray, cpu_image: np.ndarray) -> None:
    differing = (np.abs(gpu_image.astype(int) - cpu_image.astype(int)) > 8).any(axis=2).mean()
    assert differing <= 0.01, f"{100 * differing:.2f}% of the pixels differ from the CPU reference"


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.uint16, np.int16])
def test_gpu_image_matches_the_cpu_reference(dtype):
    volume = sphere(N, dtype)
    iso = {np.float32: 0.0, np.uint8: 128.5, np.uint16: 30000.5, np.int16: 0.5}[dtype]
    gpu = inkray.render(volume, iso, size=SIZE, device="gpu")
    cpu = inkray.render(volume, iso, size=SIZE, device="cpu")
    assert gpu.timings["device"] == "gpu" and gpu.timings["frame_ms"] > 0
    assert (gpu.image[..., 3] == 255).sum() > 1000
    close_to_cpu(gpu.image, cpu.image)


def test_every_pipeline_and_method_draws_the_same_image():
    renderer = inkray.Renderer(inkray.load("builtin:fractal:64").array, device="gpu")
    reference = renderer.render(127.5, size=SIZE).image
    for pipeline in ("multi", "paper"):
        for method in [m["name"] for m in inkray.compaction_methods()]:
            image = renderer.render(127.5, size=SIZE, pipeline=pipeline, method=method).image
            np.testing.assert_array_equal(image, reference, err_msg=f"{pipeline} with {method}")
    np.testing.assert_array_equal(renderer.render(127.5, size=SIZE, pipeline="single").image, reference)


def test_surfaces_and_clipping_match_the_cpu():
    volume = sphere(N)
    look = dict(surfaces=[(0.0, "skin", 0.4), (8.0, "bone")], clip_box=(0, 1, 0, 0.6, 0, 1),
                clip_plane=(1, 0, 0, -20), size=SIZE)
    close_to_cpu(inkray.render(volume, device="gpu", **look).image, inkray.render(volume, device="cpu", **look).image)


def test_cupy_volume_in_and_device_image_out(cupy):
    volume = sphere(N)
    host = inkray.render(volume, 0.0, size=SIZE, device="gpu").image
    frame = inkray.render(cupy.asarray(volume), 0.0, size=SIZE, output="device")
    assert isinstance(frame.image, cupy.ndarray) and frame.image.shape == (SIZE[1], SIZE[0], 4)
    np.testing.assert_array_equal(cupy.asnumpy(frame.image), host)


def test_torch_volume_in_and_device_image_out(torch_cuda):
    torch = torch_cuda
    volume = sphere(N)
    host = inkray.render(volume, 0.0, size=SIZE, device="gpu").image
    frame = inkray.render(torch.from_numpy(volume).cuda(), 0.0, size=SIZE, output="device")
    assert isinstance(frame.image, torch.Tensor) and frame.image.is_cuda
    np.testing.assert_array_equal(frame.image.cpu().numpy(), host)


def test_device_image_is_the_renderers_buffer_without_a_copy():
    renderer = inkray.Renderer(sphere(N), device="gpu")
    first = renderer.render(0.0, size=SIZE, output="device").image
    host = np.asarray(first.copy_to_host())
    np.testing.assert_array_equal(host, renderer.render(0.0, size=SIZE).image)
    second = renderer.render(0.0, size=SIZE, output="device", camera=inkray.Orbit(azimuth=90)).image
    assert first.ptr == second.ptr, "both views are the renderer's one image buffer"
    assert first.__cuda_array_interface__["shape"] == (SIZE[1], SIZE[0], 4)

