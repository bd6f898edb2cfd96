"""inkray.render and inkray.Renderer on the CPU reference renderer, against the program's own
images of the same volume (written as a raw file and rendered by `inkray --headless --device
cpu`): the same voxels, camera and look must give the same pixels, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

import inkray
from conftest import iso_for, raw_name, read_png, run_inkray, sphere

N = 40
SIZE = (72, 56)


def program_image(tmp_path, volume_zyx: np.ndarray, options, name="sphere") -> np.ndarray:
    """The program's CPU image of a (z, y, x) array written as NAME_XxYxZ_type.raw."""
    z, y, x = volume_zyx.shape
    raw = tmp_path / f"{name}_{x}x{y}x{z}_{raw_name(volume_zyx.dtype)}.raw"
    np.ascontiguousarray(volume_zyx).tofile(raw)
    png = tmp_path / f"{name}.png"
    run_inkray(["--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                "--no-stages", "--quiet", "--size", f"{SIZE[0]}x{SIZE[1]}", "--png", str(png), *options, str(raw)])
    return read_png(png)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.uint16, np.int16])
def test_render_of_a_sphere_array_equals_the_programs_cpu_image(tmp_path, dtype):
    volume = sphere(N, dtype)
    iso = iso_for(dtype)
    expected = program_image(tmp_path, volume, ["--iso", repr(iso)])
    frame = inkray.render(volume, iso, size=SIZE, device="cpu")
    assert frame.image.shape == (SIZE[1], SIZE[0], 4) and frame.image.dtype == np.uint8
    assert (frame.image[..., 3] == 255).sum() > 100, "the sphere should cover part of the image"
    np.testing.assert_array_equal(frame.image, expected)


def test_surfaces_clip_box_and_camera_match_the_program(tmp_path):
    volume = sphere(N)
    expected = program_image(
        tmp_path, volume,
        ["--surface", "0:bone:0.5", "--surface", "6:#ff0000", "--clip-box", "0,1,0,0.6,0.1,1",
         "--elevation", "35", "--distance", "1.2"])
    image, _ = inkray.render(
        volume,
        surfaces=[inkray.Surface(0.0, "bone", 0.5), (6.0, "#ff0000")],
        clip_box=(0, 1, 0, 0.6, 0.1, 1),
        camera=inkray.Orbit(elevation=35, distance=1.2),
        size=SIZE,
        device="cpu",
    )
    np.testing.assert_array_equal(image, expected)


def test_spacing_follows_the_array_axes(tmp_path):
    """spacing=(sz, sy, sx) for a (z, y, x) array is the program's --spacing sx,sy,sz."""
    volume = sphere(N)
    expected = program_image(tmp_path, volume, ["--iso", "0", "--spacing", "1,1.5,2.5"])
    image, _ = inkray.render(volume, 0.0, spacing=(2.5, 1.5, 1.0), size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, expected)


def test_fortran_order_reads_the_first_axis_as_x():
    """A Fortran-ordered array is (x, y, z): volume.T has the same memory, so the same image."""
    volume = sphere(N)[:, :, : N - 6]  # not symmetric in x, so that a swapped axis would show
    volume = np.ascontiguousarray(volume)
    c_image, _ = inkray.render(volume, 0.0, spacing=(1, 1, 2), size=SIZE, device="cpu")
    f_image, _ = inkray.render(volume.T, 0.0, spacing=(2, 1, 1), size=SIZE, device="cpu")
    assert volume.T.flags.f_contiguous and not volume.T.flags.c_contiguous
    np.testing.assert_array_equal(c_image, f_image)


def test_orbit_azimuth_is_the_programs_view(tmp_path):
    """The program's --orbit 4 renders views at azimuth 0, 90, ...; its second frame is 90."""
    volume = np.ascontiguousarray(sphere(N)[:, :, : N - 8])
    z, y, x = volume.shape
    raw = tmp_path / f"cut_{x}x{y}x{z}_float32.raw"
    volume.tofile(raw)
    png = tmp_path / "cut.png"
    run_inkray(["--headless", "--device", "cpu", "--frames", "2", "--warmup", "0", "--orbit", "4", "--no-stages",
                "--quiet", "--size", f"{SIZE[0]}x{SIZE[1]}", "--iso", "0", "--png", str(png), str(raw)])
    image, _ = inkray.render(volume, 0.0, camera=inkray.Orbit(azimuth=90), size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, read_png(png))


def test_dlpack_only_objects_render_like_the_array():
    class DLPackOnly:
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, **kwargs):
            return self._a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    volume = sphere(N)
    expected, _ = inkray.render(volume, 0.0, size=SIZE, device="cpu")
    image, _ = inkray.render(DLPackOnly(volume), 0.0, size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, expected)


def test_renderer_keeps_its_volume_and_renders_repeatedly():
    volume = sphere(N)
    renderer = inkray.Renderer(volume, device="cpu")
    first = renderer.render(0.0, size=SIZE)
    volume[:] = -100  # later changes do not reach the renderer (its own copy)
    second = renderer.render(0.0, size=SIZE)
    np.testing.assert_array_equal(first.image, second.image)
    assert renderer.device == "cpu" and renderer.dims == (N, N, N)
    turned = renderer.render(0.0, size=SIZE, camera={"azimuth": 45})
    assert not np.array_equal(turned.image, first.image)


def test_timings_and_depth():
    frame = inkray.render(sphere(N), 0.0, size=SIZE, device="cpu", depth=True)
    t = frame.timings
    assert t["device"] == "cpu" and t["frame_ms"] > 0 and t["rays_hit"] > 0
    assert t["secondary_ms"] == 0.0  # no secondary rays asked for (and the CPU times no phases)
    assert t["skip_rebuilt"] is True and t["skip_ms"] >= 0.0  # a new renderer makes its skip map
    hit = frame.image[..., 3] == 255
    assert np.isfinite(frame.depth[hit]).all() and np.isinf(frame.depth[~hit]).all()


def test_default_isovalue_is_the_first_suggested_one(tmp_path):
    volume = sphere(N)
    expected = program_image(tmp_path, volume, [])
    image, _ = inkray.render(volume, size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, expected)


def test_color_by_gradient_matches_the_program(tmp_path):
    volume = sphere(N)
    expected = program_image(tmp_path, volume, ["--iso", "0", "--color-by", "gradient", "--colormap", "magma"])
    image, _ = inkray.render(volume, 0.0, color_by="gradient", colormap="magma", size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, expected)


def test_step_matches_the_program(tmp_path):
    """step is the program's --step, pixel for pixel; 0.5 is the default; out of range is refused."""
    volume = sphere(N)
    expected = program_image(tmp_path, volume, ["--iso", "0", "--step", "0.25"])
    image, _ = inkray.render(volume, 0.0, step=0.25, size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, expected)
    default, _ = inkray.render(volume, 0.0, size=SIZE, device="cpu")
    half, _ = inkray.render(volume, 0.0, step=0.5, size=SIZE, device="cpu")
    np.testing.assert_array_equal(half, default)
    for bad in (0, -1, 2.0, float("nan")):
        with pytest.raises(ValueError, match="step"):
            inkray.render(volume, 0.0, step=bad, size=SIZE, device="cpu")


def test_ao_shadows_and_light_match_the_program(tmp_path):
    """ao, ao_radius, shadows, light and accumulate are the program's --ao N:R, --shadows, --light
    AZ,EL and --accumulate K, pixel for pixel; the paper's pipeline refuses them."""
    volume = sphere(N)
    expected = program_image(tmp_path, volume, ["--iso", "0", "--ao", "8:12", "--shadows", "--light", "30,45",
                                                "--accumulate", "2", "--elevation", "35"])
    image, _ = inkray.render(volume, 0.0, ao=8, ao_radius=12, shadows=True, light=(30, 45), accumulate=2,
                             camera=inkray.Orbit(elevation=35), size=SIZE, device="cpu")
    np.testing.assert_array_equal(image, expected)
    headlight, _ = inkray.render(volume, 0.0, camera=inkray.Orbit(elevation=35), size=SIZE, device="cpu")
    assert (image[..., :3] != headlight[..., :3]).any(), "a light from the side should change the shading"
    np.testing.assert_array_equal(image[..., 3], headlight[..., 3])
    with pytest.raises(ValueError, match="paper"):
        inkray.render(volume, 0.0, ao=4, pipeline="paper", size=SIZE, device="cpu")
    with pytest.raises(ValueError, match="azimuth"):
        inkray.render(volume, 0.0, light=(200, 0), size=SIZE, device="cpu")
