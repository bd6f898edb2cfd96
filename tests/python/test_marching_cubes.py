"""inkray.marching_cubes against scikit-image's marching_cubes (method='lorensen', the classic
table inkray's extraction uses): on a sphere and a torus the same vertices (within 1e-4 voxels
after sorting), the same triangle count, the same triangles as sets of vertex positions,
scikit-image's winding, normals and values; axis order, spacing and Fortran order; bad input.
inkray.Extractor against fresh calls and the CPU path, and its snapshot rule; the mesh written
into the caller's arrays (output='caller') and into one buffer of the caller's (output='buffer',
the four arrays views of one allocation). GPU cases (the GPU extraction, CuPy and PyTorch
arrays) skip without a device."""

from __future__ import annotations

import numpy as np
import pytest

import inkray
from conftest import requires_gpu, sphere

measure = pytest.importorskip("skimage.measure", reason="scikit-image is the reference (pip install scikit-image)")
pytestmark = pytest.mark.skipif(not hasattr(inkray._inkray, "Extractor"),
                                reason="this build has no extraction module (extract/)")


def torus(n: int) -> np.ndarray:
    """(z, y, x): positive inside a torus around the z axis, radii 0.3 n and 0.12 n."""
    c = (n - 1) / 2.0
    k, j, i = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    ring = np.sqrt((i - c) ** 2 + (j - c) ** 2) - 0.3 * n
    return (0.12 * n - np.sqrt(ring**2 + (k - c) ** 2)).astype(np.float32)


def winding(verts: np.ndarray, faces: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Per triangle, the sign of its right-handed normal against its vertices' normals."""
    v = np.asarray(verts, np.float64)
    face_normal = np.cross(v[faces[:, 1]] - v[faces[:, 0]], v[faces[:, 2]] - v[faces[:, 0]])
    return np.sign(np.sum(face_normal * normals[faces].sum(axis=1), axis=1))


def compare_with_skimage(volume, level, spacing=(1.0, 1.0, 1.0), device=None, normal_agreement=0.9):
    """Our mesh against scikit-image's lorensen mesh: the same triangle count, each of our
    vertices within 1e-4 voxels of its own scikit-image vertex (a one-to-one match; 1/256 where
    inkray moved it off a grid point), triangles
    wound as scikit-image winds them, the same normals (direction) and values per matched vertex.
    The triangles themselves are not compared: where a cell's surface is a quadrilateral the two
    case tables may cut it along different diagonals (docs/extract.md)."""
    from scipy.spatial import cKDTree

    verts, faces, normals, values = inkray.marching_cubes(volume, level, spacing=spacing, device=device)
    sk_verts, sk_faces, sk_normals, sk_values = measure.marching_cubes(volume, level, spacing=spacing,
                                                                        method="lorensen")
    assert verts.dtype == np.float32 and faces.dtype == np.int32
    assert normals.dtype == np.float32 and values.dtype == np.float32
    assert verts.shape == sk_verts.shape and normals.shape == verts.shape and values.shape == (len(verts),)
    assert len(faces) == len(sk_faces), "triangle count"
    distance, match = cKDTree(sk_verts).query(np.asarray(verts, np.float64))
    # inkray keeps a vertex at least 1/256 of its edge from a grid point (extract.h): there it
    # sits exactly 1/256 from the grid point, where scikit-image's may be closer.
    grid = np.asarray(verts, np.float64) / np.asarray(spacing)
    frac = np.abs(grid - np.round(grid))
    clamped = np.any(np.abs(frac - 1 / 256) < 1e-4, axis=1)
    voxels = distance / min(spacing)
    assert voxels[~clamped].max(initial=0) <= 1e-4, f"a vertex {voxels[~clamped].max()} voxels from scikit-image's"
    assert voxels[clamped].max(initial=0) <= 1 / 256 + 1e-4, "a vertex moved off a grid point by more than 1/256"
    assert len(np.unique(match)) == len(verts), "the vertices match one to one"
    ours_wound, sk_wound = winding(verts, faces, normals), winding(sk_verts, sk_faces, sk_normals)
    assert abs(sk_wound.mean()) > 0.98, "scikit-image winds its triangles one way"
    assert (ours_wound == np.sign(sk_wound.mean())).mean() > 0.98, "triangles wound as scikit-image's"
    agreement = np.sum(normals * sk_normals[match], axis=1)
    assert agreement.min() > normal_agreement, f"normals differ in direction (cosine {agreement.min():.3f})"
    np.testing.assert_allclose(values, sk_values[match], rtol=1e-6)
    return verts, faces


@pytest.mark.parametrize("shape", ["sphere", "torus"])
@pytest.mark.parametrize("n", [24, 41])
def test_cpu_mesh_equals_scikit_image_lorensen(shape, n):
    volume = sphere(n) if shape == "sphere" else torus(n)
    compare_with_skimage(volume, 0.0, device="cpu")


def test_spacing_and_axis_order():
    """Normals: inkray's gradient is in world units, scikit-image's in voxel units, so with
    uneven spacing only their sides agree."""
    volume = np.ascontiguousarray(torus(32)[:, :, 3:])
    compare_with_skimage(volume, 0.0, spacing=(2.0, 1.0, 0.5), device="cpu", normal_agreement=0.0)


def test_fortran_order_gives_the_same_mesh():
    volume = np.asfortranarray(torus(28)[:, 2:, :])
    compare_with_skimage(volume, 0.0, spacing=(1.0, 2.0, 3.0), device="cpu", normal_agreement=0.0)


def test_integer_volumes_and_ascent():
    volume = np.clip(np.round(128 + 6 * sphere(30)), 0, 255).astype(np.uint8)
    compare_with_skimage(volume, 127.5, device="cpu")
    verts, faces, _, _ = inkray.marching_cubes(volume, 127.5, device="cpu")
    _, ascent, _, _ = inkray.marching_cubes(volume, 127.5, device="cpu", gradient_direction="ascent")
    np.testing.assert_array_equal(ascent, faces[:, ::-1])


def test_float64_is_converted_and_level_defaults_to_mid_range():
    compare_with_skimage(sphere(20).astype(np.float64), None, device="cpu")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"level": 1e6}, "no surface at level"),
        ({"method": "dual"}, "method 'dual'"),
        ({"step_size": 2}, "step_size 2"),
        ({"mask": np.ones((8, 8, 8), bool)}, "mask is not supported"),
        ({"gradient_direction": "up"}, "gradient_direction 'up'"),
        ({"spacing": (1, 1)}, "spacing must be three positive"),
        ({"values": "max"}, "values 'max'"),
    ],
)
def test_bad_arguments(kwargs, message):
    options = {"level": 0.0, "device": "cpu", **kwargs}
    with pytest.raises(ValueError, match=message):
        inkray.marching_cubes(sphere(8), **options)


@pytest.mark.parametrize(
    "volume, message",
    [(np.zeros((4, 4, 4, 2), np.float32), "3-D"), (np.zeros((0, 4, 4), np.float32), "empty"),
     (sphere(8)[:, ::2, :], "not contiguous"), (np.zeros((4, 4, 4), np.complex64), "dtype")],
)
def test_bad_volumes(volume, message):
    with pytest.raises(ValueError, match=message):
        inkray.marching_cubes(volume, 0.0, device="cpu")


# ---- GPU ----------------------------------------------------------------------------------------


@requires_gpu
@pytest.mark.parametrize("shape", ["sphere", "torus"])
def test_gpu_mesh_equals_the_cpu_mesh_and_scikit_image(shape):
    volume = sphere(48) if shape == "sphere" else torus(48)
    gpu = inkray.marching_cubes(volume, 0.0, device="gpu")
    cpu = inkray.marching_cubes(volume, 0.0, device="cpu")
    for a, b in zip(gpu, cpu):
        np.testing.assert_array_equal(a, b)
    compare_with_skimage(volume, 0.0, device="gpu")


@requires_gpu
@pytest.mark.parametrize("compaction", [m["name"] for m in inkray.compaction_methods()])
def test_every_compaction_method_gives_the_same_mesh(compaction):
    volume = inkray.load("builtin:fractal:64").array
    reference = inkray.marching_cubes(volume, 127.5, device="cpu")
    for a, b in zip(inkray.marching_cubes(volume, 127.5, device="gpu", compaction=compaction), reference):
        np.testing.assert_array_equal(a, b)


def test_cupy_in_and_out(cupy):
    volume = torus(40)
    reference = inkray.marching_cubes(volume, 0.0, device="cpu")
    result = inkray.marching_cubes(cupy.asarray(volume), 0.0, output="device")
    assert all(isinstance(a, cupy.ndarray) for a in result)
    for a, b in zip(result, reference):
        np.testing.assert_array_equal(cupy.asnumpy(a), b)
    numpy_out = inkray.marching_cubes(cupy.asarray(volume), 0.0)
    for a, b in zip(numpy_out, reference):
        np.testing.assert_array_equal(a, b)


def test_torch_in_and_out(torch_cuda):
    torch = torch_cuda
    volume = sphere(40)
    reference = inkray.marching_cubes(volume, 0.0, device="cpu")
    result = inkray.marching_cubes(torch.from_numpy(volume).cuda(), 0.0, output="device")
    assert all(isinstance(a, torch.Tensor) and a.is_cuda for a in result)
    for a, b in zip(result, reference):
        np.testing.assert_array_equal(a.cpu().numpy(), b)


def test_numpy_volume_with_device_output(cupy):
    volume = torus(36)
    reference = inkray.marching_cubes(volume, 0.0, device="cpu")
    for a, b in zip(inkray.marching_cubes(volume, 0.0, output="device"), reference):
        np.testing.assert_array_equal(cupy.asnumpy(a), b)


# ---- Extractor: the brick ranges computed once, from a snapshot ---------------------------------------


def assert_same_mesh(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(inkray._arrays.to_numpy(x), inkray._arrays.to_numpy(y))


def test_extractor_equals_marching_cubes_at_every_level_and_option():
    volume = torus(36)
    extractor = inkray.Extractor(volume, spacing=(1.0, 2.0, 0.5), device="cpu")
    assert extractor.device == "cpu"
    for level in (-2.0, 0.0, 1.5):
        for options in ({}, {"values": "isovalue"}, {"values": "gradient", "gradient_direction": "ascent"}):
            fresh = inkray.marching_cubes(volume, level, spacing=(1.0, 2.0, 0.5), device="cpu", **options)
            assert_same_mesh(extractor.marching_cubes(level, **options), fresh)
    # level=None: the middle of the value range, as marching_cubes takes it
    assert_same_mesh(extractor.marching_cubes(), inkray.marching_cubes(volume, spacing=(1.0, 2.0, 0.5), device="cpu"))


def test_extractor_is_a_snapshot_until_set_volume():
    """Changing the array after the Extractor took it changes nothing (its brick ranges cannot go
    stale); set_volume takes the new values."""
    volume = sphere(32)
    original = volume.copy()
    before = inkray.marching_cubes(volume, 0.0, device="cpu")
    extractor = inkray.Extractor(volume, device="cpu")
    volume += 3.0  # in place: a larger sphere, and bricks that had no surface now have one
    after = inkray.marching_cubes(volume, 0.0, device="cpu")
    assert len(after[0]) > len(before[0])
    assert_same_mesh(extractor.marching_cubes(0.0), before)
    assert_same_mesh(extractor.marching_cubes(), inkray.marching_cubes(original, device="cpu"))
    extractor.set_volume(volume)
    assert_same_mesh(extractor.marching_cubes(0.0), after)


def test_extractor_fortran_order_and_other_dtypes():
    volume = np.asfortranarray(torus(28)[:, 2:, :])
    assert_same_mesh(inkray.Extractor(volume, device="cpu").marching_cubes(0.0),
                     inkray.marching_cubes(volume, 0.0, device="cpu"))
    volume = sphere(20).astype(np.float64)
    assert_same_mesh(inkray.Extractor(volume, device="cpu").marching_cubes(0.0),
                     inkray.marching_cubes(volume, 0.0, device="cpu"))


def test_extractor_bad_arguments():
    extractor = inkray.Extractor(sphere(12), device="cpu")
    with pytest.raises(ValueError, match="method 'dual'"):
        extractor.marching_cubes(0.0, method="dual")
    with pytest.raises(ValueError, match="no surface at level"):
        extractor.marching_cubes(1e6)
    with pytest.raises(ValueError, match="not contiguous"):
        inkray.Extractor(sphere(8)[:, ::2, :], device="cpu")


# ---- output='caller': the mesh written into arrays the caller allocates (the C library's IR_MESH_CALLER) ----


def host_allocator(calls):
    def allocate(vertices, triangles):
        calls.append((vertices, triangles))
        return (np.empty((vertices, 3), np.float32), np.empty((vertices, 3), np.float32),
                np.empty(vertices, np.float32), np.empty((triangles, 3), np.int32))
    return allocate


def test_caller_arrays_on_the_cpu_equal_the_host_mesh():
    impl = inkray._inkray.Extractor("cpu")
    impl.set_grid(torus(30))
    reference = [np.asarray(a) for a in impl.extract(0.0, values="local", array_axes=True)[:4]]
    calls = []
    result = impl.extract(0.0, values="local", array_axes=True, output="caller", allocate=host_allocator(calls))
    assert calls == [(len(reference[0]), len(reference[3]))]
    for a, b in zip(result[:4], reference):
        assert isinstance(a, np.ndarray)
        np.testing.assert_array_equal(a, b)
    empty = impl.extract(1e6, output="caller", allocate=host_allocator(calls))
    assert calls[-1] == (0, 0) and empty[0].shape == (0, 3) and empty[3].shape == (0, 3)


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda v, t: (np.empty((v, 3), np.float32),) * 3, "returned 3 arrays"),
        (lambda v, t: (np.empty((v, 3), np.float64),) * 2 + (np.empty(v, np.float32), np.empty((t, 3), np.int32)),
         "positions is float64; give float32"),
        (lambda v, t: (np.empty((v, 3), np.float32),) * 2 + (np.empty(v + 1, np.float32), np.empty((t, 3), np.int32)),
         r"values has shape"),
        (lambda v, t: (np.empty((v, 3), np.float32),) * 2 + (np.empty(v, np.float32),
                                                            np.empty((3, t), np.int32).T), "C-contiguous"),
    ],
)
def test_caller_arrays_that_do_not_fit_are_refused(bad, message):
    impl = inkray._inkray.Extractor("cpu")
    impl.set_grid(sphere(16))
    with pytest.raises(ValueError, match=message):
        impl.extract(0.0, output="caller", allocate=bad)
    impl.extract(0.0)  # the extractor works on


def test_an_allocator_exception_comes_through():
    impl = inkray._inkray.Extractor("cpu")
    impl.set_grid(sphere(16))

    def allocate(vertices, triangles):
        raise MemoryError(f"no room for {vertices} vertices")

    with pytest.raises(MemoryError, match="no room for"):
        impl.extract(0.0, output="caller", allocate=allocate)
    with pytest.raises(ValueError, match="allocate"):
        impl.extract(0.0, output="caller")


def assert_views_of_one_buffer(arrays, buffer, layout):
    """The four arrays lie in buffer at the layout's offsets, each on a 256-byte boundary of it,
    with the layout's shapes and dtypes (mesh_views' contract, for any of the three libraries)."""
    def address(a):
        lib = inkray._arrays.library_of(a)
        return a.data_ptr() if lib == "torch" else a.data.ptr if lib == "cupy" else a.ctypes.data

    assert [a for a, _, _ in layout] == sorted(a for a, _, _ in layout)
    for a, (offset, shape, dtype) in zip(arrays, layout):
        assert offset % 256 == 0
        assert tuple(a.shape) == tuple(shape) and str(a.dtype).replace("torch.", "") == dtype
        assert address(a) == address(buffer) + offset
        assert a.is_contiguous() if inkray._arrays.library_of(a) == "torch" else a.flags.c_contiguous
    nbytes = [int(np.prod(shape)) * 4 for _, shape, _ in layout]
    ends = [offset + n for (offset, _, _), n in zip(layout, nbytes)]
    assert all(end <= nxt for end, (nxt, _, _) in zip(ends, layout[1:])), "the arrays do not overlap"
    assert ends[-1] <= len(buffer) and len(buffer) % 256 == 0


def test_buffer_output_on_the_cpu_gives_views_of_one_allocation():
    impl = inkray._inkray.Extractor("cpu")
    impl.set_grid(torus(30))
    reference = [np.asarray(a) for a in impl.extract(0.0, values="local", array_axes=True)[:4]]
    sizes = []

    def allocate(nbytes):
        sizes.append(nbytes)
        return np.empty(nbytes, np.uint8)

    buffer, layout, stats = impl.extract(0.0, values="local", array_axes=True, output="buffer", allocate=allocate)
    assert sizes == [len(buffer)] and stats["total_ms"] >= 0
    arrays = inkray._arrays.mesh_views(buffer, layout)
    assert_views_of_one_buffer(arrays, buffer, layout)
    for a, b in zip(arrays, reference):
        assert a.base is buffer
        np.testing.assert_array_equal(a, b)
    del buffer
    np.testing.assert_array_equal(arrays[3], reference[3])  # each view keeps the memory
    empty, layout, _ = impl.extract(1e6, output="buffer", allocate=allocate)
    assert sizes[-1] == 0 and [shape for _, shape, _ in layout] == [(0, 3), (0, 3), (0,), (0, 3)]
    assert [a.shape for a in inkray._arrays.mesh_views(empty, layout)] == [(0, 3), (0, 3), (0,), (0, 3)]


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda n: np.empty(n + 256, np.uint8), r"the buffer has \d+ bytes; give \d+"),
        (lambda n: np.empty((n // 4, 4), np.uint8), "1-D uint8 array"),
        (lambda n: np.empty(2 * n, np.uint8)[::2], "C-contiguous"),
        (lambda n: np.frombuffer(bytes(n), np.uint8), "C-contiguous and writable"),
        (lambda n: np.empty(n + 1, np.uint8)[1:], "not aligned to 4 bytes"),
        (lambda n: "bytes", "expected an array"),
    ],
)
def test_buffers_that_do_not_fit_are_refused(bad, message):
    impl = inkray._inkray.Extractor("cpu")
    impl.set_grid(sphere(16))
    with pytest.raises((ValueError, TypeError), match=message):
        impl.extract(0.0, output="buffer", allocate=bad)
    impl.extract(0.0)  # the extractor works on


def test_buffer_views_of_torch_tensors():
    """mesh_views on a PyTorch buffer (CPU tensors here, the same code as for CUDA tensors)."""
    torch = pytest.importorskip("torch")
    impl = inkray._inkray.Extractor("cpu")
    impl.set_grid(torus(30))
    reference = [np.asarray(a) for a in impl.extract(0.0, array_axes=True)[:4]]
    buffer, layout, _ = impl.extract(0.0, array_axes=True, output="buffer",
                                     allocate=lambda n: torch.empty(n, dtype=torch.uint8))
    arrays = inkray._arrays.mesh_views(buffer, layout)
    assert_views_of_one_buffer(arrays, buffer, layout)
    assert len({a.untyped_storage().data_ptr() for a in arrays}) == 1
    del buffer
    for a, b in zip(arrays, reference):
        assert isinstance(a, torch.Tensor)
        np.testing.assert_array_equal(a.numpy(), b)


# ---- GPU: device arrays written in place, and the Extractor on device volumes ----------------------------


@requires_gpu
def test_gpu_caller_arrays_equal_the_extractors_own(cupy):
    impl = inkray._inkray.Extractor("gpu")
    volume = cupy.asarray(inkray.load("builtin:fractal:64").array)
    impl.set_grid(volume)
    reference = [np.asarray(a) for a in impl.extract(127.5, values="local", array_axes=True)[:4]]
    def four(v, t):
        return (cupy.empty((v, 3), cupy.float32), cupy.empty((v, 3), cupy.float32), cupy.empty(v, cupy.float32),
                cupy.empty((t, 3), cupy.int32))

    allocate, stream = inkray._arrays.mesh_allocator("cupy", 0)
    for compaction in [m["name"] for m in inkray.compaction_methods()]:
        # with the allocating stream named (one wait in the binding) and without (DLPack's order)
        named = {"stream": stream} if compaction != "thrust" else {}
        result = impl.extract(127.5, method=compaction, values="local", array_axes=True, output="caller",
                              allocate=four, **named)
        buffer, layout, _ = impl.extract(127.5, method=compaction, values="local", array_axes=True,
                                         output="buffer", allocate=allocate, **named)
        views = inkray._arrays.mesh_views(buffer, layout)
        assert_views_of_one_buffer(views, buffer, layout)
        for a, c, b in zip(result[:4], views, reference):
            assert isinstance(a, cupy.ndarray) and isinstance(c, cupy.ndarray)
            np.testing.assert_array_equal(cupy.asnumpy(a), b)
            np.testing.assert_array_equal(cupy.asnumpy(c), b)
    host = lambda v, t: host_allocator([])(v, t)  # noqa: E731
    with pytest.raises(ValueError, match="must be a device array"):
        impl.extract(127.5, output="caller", allocate=host)
    with pytest.raises(ValueError, match="the buffer must be a device array"):
        impl.extract(127.5, output="buffer", allocate=lambda n: np.empty(n, np.uint8))


@requires_gpu
@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_device_output_is_four_views_of_one_allocation(library, request):
    """marching_cubes(output='device') allocates the mesh once: the four arrays are views of one
    buffer of the caller's library, each at its offset, correct, and each kept alive on its own
    (the others dropped and their memory's pool handed more work)."""
    lib = request.getfixturevalue("cupy" if library == "cupy" else "torch_cuda")
    host = torus(48)
    reference = inkray.marching_cubes(host, 0.0, device="cpu")
    volume = lib.asarray(host) if library == "cupy" else lib.from_numpy(host).cuda()
    for result in (inkray.marching_cubes(volume, 0.0, output="device"),
                   inkray.Extractor(volume).marching_cubes(0.0, output="device")):
        assert all(inkray._arrays.library_of(a) == library for a in result)
        verts, faces, normals, values = result
        if library == "torch":
            assert len({a.untyped_storage().data_ptr() for a in result}) == 1
            start = [a.data_ptr() for a in result]
        else:
            assert all(a.data.mem is verts.data.mem for a in result)
            start = [a.data.ptr for a in result]
        # the allocation's order: positions, normals, values, triangles, each on a 256-byte boundary
        assert [start[0], start[2], start[3], start[1]] == sorted(start) and all(p % 256 == 0 for p in start)
        assert_same_mesh(result, reference)
        del verts, normals, values
        # new arrays of the library, which would reuse the memory if it had been freed
        busy = [lib.ones(1 << 20) if library == "cupy" else lib.ones(1 << 20, device="cuda") for _ in range(8)]
        np.testing.assert_array_equal(inkray._arrays.to_numpy(faces), reference[1])
        del busy, faces


@requires_gpu
@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_gpu_extractor_equals_fresh_and_cpu_meshes(library, request):
    lib = request.getfixturevalue("cupy" if library == "cupy" else "torch_cuda")
    host = inkray.load("builtin:fractal:64").array
    volume = lib.asarray(host) if library == "cupy" else lib.from_numpy(host).cuda()
    extractor = inkray.Extractor(volume)
    assert extractor.device == "gpu"
    for level in (100.5, 127.5, 160.0):
        cpu = inkray.marching_cubes(host, level, device="cpu")
        fresh = inkray.marching_cubes(volume, level, output="device")
        kept = extractor.marching_cubes(level, output="device")
        again = extractor.marching_cubes(level, output="device")
        for result in (fresh, kept, again):
            assert all(inkray._arrays.library_of(a) == library for a in result)
            assert_same_mesh(result, cpu)
        assert_same_mesh(extractor.marching_cubes(level), cpu)  # NumPy out


@requires_gpu
def test_gpu_extractor_is_a_snapshot(cupy):
    host = sphere(40)
    volume = cupy.asarray(host)
    extractor = inkray.Extractor(volume)
    volume += 3.0
    assert_same_mesh(extractor.marching_cubes(0.0, output="device"), inkray.marching_cubes(host, 0.0, device="cpu"))
    extractor.set_volume(volume)
    assert_same_mesh(extractor.marching_cubes(0.0, output="device"),
                     inkray.marching_cubes(host + 3.0, 0.0, device="cpu"))
    numpy_volume = host.copy()
    uploaded = inkray.Extractor(numpy_volume)  # uploaded: a copy of its own
    numpy_volume += 3.0
    assert_same_mesh(uploaded.marching_cubes(0.0), inkray.marching_cubes(host, 0.0, device="cpu"))
    assert_same_mesh(uploaded.marching_cubes(), inkray.marching_cubes(host, device="cpu"))


@requires_gpu
def test_device_output_on_the_callers_stream(cupy):
    """The arrays come from CuPy's pool on the caller's current stream, which may hand back memory
    that arrays freed with work still queued on that stream used: the extraction writes after that
    work (an event on that stream), and returns the mesh complete."""
    host = torus(48)
    reference = inkray.marching_cubes(host, 0.0, device="cpu")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        volume = cupy.asarray(host)
        for _ in range(3):
            # Queued work that writes arrays of the mesh's sizes and frees them: the pool hands
            # their memory to the mesh while the writes may still be queued.
            busy = [cupy.ones(a.shape, a.dtype) for a in reference]
            for _ in range(50):
                busy = [b * 1 for b in busy]
            del busy
            result = inkray.marching_cubes(volume, 0.0, output="device")
            del volume
            volume = cupy.asarray(host)
            assert_same_mesh(result, reference)
