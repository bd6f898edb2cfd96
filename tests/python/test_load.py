"""inkray.load against known voxels and against the program's loader.

Each format is written here from a known array (the loader must give it back exactly, in
(z, y, x) order), and the program's `inkray info` on the same file must report the same size,
type, spacing, value range and mean; the real files in tests/data are checked against `inkray
info` and, where they are raw, against the bytes on disk."""

from __future__ import annotations

import base64
import gzip
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import inkray
from conftest import REAL_DATA, SAMPLES, run_inkray

SHAPE = (3, 4, 5)  # z, y, x


def known(dtype) -> np.ndarray:
    values = (np.arange(np.prod(SHAPE)) * 7 % 23 - 3).reshape(SHAPE)
    if np.dtype(dtype).kind == "u":
        values = values + 3
    if np.dtype(dtype) == np.float32:
        values = values + 0.25
    return values.astype(dtype)


def info_of(path: Path, *options) -> dict:
    """What `inkray info` says: dims (x, y, z), type, spacing (x, y, z), range, mean."""
    text = run_inkray(["info", *options, str(path)]).stdout
    fields = dict(re.findall(r"^(\w[\w-]*)\s+(.*)$", text, re.M))
    return {
        "dims": tuple(int(v) for v in re.match(r"(\d+) x (\d+) x (\d+)", fields["dims"]).groups()),
        "type": fields["type"],
        "spacing": tuple(float(v) for v in fields["spacing"].split(" x ")),
        "range": tuple(float(v) for v in fields["range"].split(" .. ")),
        "mean": float(fields["mean"]),
    }


def check_against_program(path: Path, volume: inkray.Volume, *options) -> None:
    info = info_of(path, *options)
    array = volume.array
    assert info["dims"] == array.shape[::-1]
    assert info["type"] == volume.info["dtype"] == array.dtype.name
    np.testing.assert_allclose(info["spacing"], volume.spacing[::-1], rtol=1e-5)
    finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array
    np.testing.assert_allclose(info["range"], (finite.min(), finite.max()), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(info["mean"], finite.mean(dtype=np.float64), rtol=1e-5, atol=1e-6)


def nifti(array: np.ndarray, datatype: int, spacing_xyz) -> bytes:
    header = bytearray(352)
    struct.pack_into("<i", header, 0, 348)
    z, y, x = array.shape
    struct.pack_into("<8h", header, 40, 3, x, y, z, 1, 1, 1, 1)
    struct.pack_into("<hh", header, 70, datatype, array.dtype.itemsize * 8)
    struct.pack_into("<8f", header, 76, 1, *spacing_xyz, 1, 1, 1, 1)
    struct.pack_into("<f", header, 108, 352.0)
    header[344:348] = b"n+1\0"
    return bytes(header) + array.tobytes()


def write_format(tmp_path: Path, kind: str) -> tuple:
    """Writes a known volume as `kind`; returns (path, array, spacing (z, y, x), options)."""
    z, y, x = SHAPE
    if kind == "raw":
        a = known(np.int16)
        p = tmp_path / f"v_{x}x{y}x{z}_int16.raw"
        p.write_bytes(a.tobytes())
        return p, a, (1, 1, 1), []
    if kind == "raw-options":
        a = known(np.uint16)
        p = tmp_path / "anything.bin"
        p.write_bytes(a.astype(">u2").tobytes())
        return p, a, (3, 2, 1), ["--dims", f"{x}x{y}x{z}", "--type", "uint16", "--endian", "big", "--spacing", "1,2,3"]
    if kind == "raw.gz":
        a = known(np.float32)
        p = tmp_path / f"v_{x}x{y}x{z}_float32.raw.gz"
        p.write_bytes(gzip.compress(a.tobytes()))
        return p, a, (1, 1, 1), []
    if kind == "nrrd":
        a = known(np.int16)
        p = tmp_path / "v.nrrd"
        p.write_bytes(b"NRRD0004\ntype: short\ndimension: 3\nsizes: %d %d %d\nspacings: 0.5 2 3\nendian: big\n"
                      b"encoding: gzip\n\n" % (x, y, z) + gzip.compress(a.astype(">i2").tobytes()))
        return p, a, (3, 2, 0.5), []
    if kind == "nhdr":
        a = known(np.uint8)
        (tmp_path / "v.data").write_bytes(a.tobytes())
        p = tmp_path / "v.nhdr"
        p.write_text(f"NRRD0004\ntype: uchar\ndimension: 3\nsizes: {x} {y} {z}\nencoding: raw\ndata file: v.data\n")
        return p, a, (1, 1, 1), []
    if kind == "mhd":
        a = known(np.float32)
        (tmp_path / "m.raw").write_bytes(a.tobytes())
        p = tmp_path / "m.mhd"
        p.write_text(f"ObjectType = Image\nNDims = 3\nDimSize = {x} {y} {z}\nElementType = MET_FLOAT\n"
                     "ElementSpacing = 0.25 0.5 4\nElementDataFile = m.raw\n")
        return p, a, (4, 0.5, 0.25), []
    if kind == "mha":
        a = known(np.uint16)
        p = tmp_path / "m.mha"
        p.write_bytes(f"ObjectType = Image\nNDims = 3\nDimSize = {x} {y} {z}\nElementType = MET_USHORT\n"
                      "CompressedData = True\nElementDataFile = LOCAL\n".encode() + zlib.compress(a.tobytes()))
        return p, a, (1, 1, 1), []
    if kind == "nii":
        a = known(np.int16)
        p = tmp_path / "n.nii"
        p.write_bytes(nifti(a, 4, (1.5, 2.5, 3.5)))
        return p, a, (3.5, 2.5, 1.5), []
    if kind == "nii.gz":
        a = known(np.float32)
        p = tmp_path / "n.nii.gz"
        p.write_bytes(gzip.compress(nifti(a, 16, (1, 1, 2))))
        return p, a, (2, 1, 1), []
    if kind == "dat":
        a = known(np.uint16)
        (tmp_path / "q.raw").write_bytes(a.tobytes())
        p = tmp_path / "q.dat"
        p.write_text(f"ObjectFileName: q.raw\nTaggedFileName: ---\nResolution:     {x} {y} {z}\n"
                     "SliceThickness: 1 1 2.5\nFormat:         USHORT\nNbrTags:        0\n"
                     "ObjectType:     TEXTURE_VOLUME_OBJECT\n")
        return p, a, (2.5, 1, 1), []
    if kind == "vti":
        a = known(np.float32)
        payload = a.tobytes()
        encoded = base64.b64encode(struct.pack("<I", len(payload)) + payload).decode()
        p = tmp_path / "v.vti"
        p.write_text(
            '<?xml version="1.0"?>\n<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" '
            'header_type="UInt32">\n'
            f'  <ImageData WholeExtent="0 {x - 1} 0 {y - 1} 0 {z - 1}" Origin="10 20 30" Spacing="1 2 3">\n'
            f'    <Piece Extent="0 {x - 1} 0 {y - 1} 0 {z - 1}">\n      <PointData Scalars="density">\n'
            '        <DataArray type="Float32" Name="density" NumberOfComponents="1" format="binary">\n'
            f"          {encoded}\n        </DataArray>\n      </PointData>\n    </Piece>\n  </ImageData>\n"
            "</VTKFile>\n")
        return p, a, (3, 2, 1), []
    if kind == "tiff":
        tifffile = pytest.importorskip("tifffile", reason="tifffile writes the TIFF stack (it comes with scikit-image)")
        a = known(np.uint16)
        p = tmp_path / "stack.tif"
        tifffile.imwrite(p, a, photometric="minisblack")
        return p, a, (1, 1, 1), []
    raise AssertionError(kind)


FORMATS = ["raw", "raw-options", "raw.gz", "nrrd", "nhdr", "mhd", "mha", "nii", "nii.gz", "dat", "vti", "tiff"]


@pytest.mark.parametrize("kind", FORMATS)
def test_every_format_loads_its_known_voxels_like_the_program(tmp_path, kind):
    path, expected, spacing, options = write_format(tmp_path, kind)
    python_options = {}
    if options:
        python_options = {"shape": SHAPE, "dtype": "uint16", "endian": "big", "spacing": (3, 2, 1)}
    try:
        volume = inkray.load(path, **python_options)
    except ValueError as e:
        # A build without an optional library (libtiff, expat) says so; nothing else is skipped.
        if "was built without" in str(e):
            pytest.skip(str(e))
        raise
    assert volume.array.flags.c_contiguous and volume.array.shape == SHAPE
    np.testing.assert_array_equal(volume.array, expected)
    assert volume.array.dtype == expected.dtype
    np.testing.assert_allclose(volume.spacing, spacing, rtol=1e-6)
    check_against_program(path, volume, *options)


def test_vti_origin_is_reported_in_array_order(tmp_path):
    path, _, _, _ = write_format(tmp_path, "vti")
    assert inkray.load(path).origin == (30.0, 20.0, 10.0)


@pytest.mark.parametrize(
    "name", ["neghip_66x66x66_uint8.raw", "headsq_64x64x93_int16.raw", "carotid_76x49x45_float32.raw"]
)
def test_real_raw_files_equal_their_bytes(name):
    volume = inkray.load(REAL_DATA / name)
    x, y, z = (int(v) for v in re.search(r"_(\d+)x(\d+)x(\d+)_", name).groups())
    expected = np.fromfile(REAL_DATA / name, dtype=volume.array.dtype).reshape(z, y, x)
    np.testing.assert_array_equal(volume.array, expected)
    check_against_program(REAL_DATA / name, volume)


@pytest.mark.parametrize(
    "path",
    [REAL_DATA / "HeadMRVolume.mhd", REAL_DATA / "headsq" / "quarter.nhdr", REAL_DATA / "frog" / "frogtissue.mhd",
     SAMPLES / "sphere_enhanced_ct.dcm"],
    ids=lambda p: p.name,
)
def test_real_files_match_the_program(path):
    try:
        volume = inkray.load(path)
    except ValueError as e:
        if "libgdcm-dev" in str(e):
            pytest.skip(f"built without GDCM: {e}")
        raise
    check_against_program(path, volume)


def test_headsq_nrrd_equals_the_raw_copy():
    nrrd = inkray.load(REAL_DATA / "headsq" / "quarter.nhdr")
    raw = inkray.load(REAL_DATA / "headsq_64x64x93_int16.raw")
    np.testing.assert_array_equal(nrrd.array, raw.array)
    assert nrrd.spacing == pytest.approx((1.5, 3.2, 3.2))


@pytest.mark.parametrize("name", ["sphere:24", "marschner-lobb:20", "fractal:32"])
def test_builtin_volumes(name):
    volume = inkray.load(f"builtin:{name}")
    n = int(name.split(":")[1])
    assert volume.array.shape == (n, n, n) and volume.info["name"] == f"builtin:{name}"
    check_against_program(Path(f"builtin:{name}"), volume)


def test_region_and_header_only():
    whole = inkray.load(REAL_DATA / "neghip_66x66x66_uint8.raw").array
    part = inkray.load(REAL_DATA / "neghip_66x66x66_uint8.raw", region_offset=(10, 20, 30), region_size=(5, 6, 7))
    np.testing.assert_array_equal(part.array, whole[10:15, 20:26, 30:37])
    assert part.info["region_offset"] == (10, 20, 30) and part.info["full_shape"] == (66, 66, 66)
    header = inkray.load(REAL_DATA / "HeadMRVolume.mhd", header_only=True)
    assert header.array is None and header.spacing == (4.0, 4.0, 4.0)
