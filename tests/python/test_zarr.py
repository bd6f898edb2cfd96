"""Zarr v2/v3, OME-Zarr and HDF5 written here by zarr-python, numcodecs and h5py with known
content, read by inkray.load and the program: voxels equal to the arrays written, dims, spacing,
origin and value range as `inkray info` prints them, every codec, F order, missing chunks,
sharding, levels, t and c axes, the picture equal to the raw volume's, broken chunks and lying
metadata refused with exit 2 naming what is wrong. Skipped (with the reason) where zarr-python,
numcodecs or h5py are not installed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import inkray
from conftest import read_png, run_inkray

zarr = pytest.importorskip("zarr", minversion="3", reason="zarr-python 3 writes the Zarr test arrays")
numcodecs = pytest.importorskip("numcodecs", reason="numcodecs gives the Zarr v2 codecs")
from zarr.codecs import (BloscCodec, BytesCodec, GzipCodec, ShardingCodec,  # noqa: E402
                         TransposeCodec, ZstdCodec)

SHAPE = (18, 21, 26)  # z, y, x: no chunk size below divides them


def field(dtype="uint16", t=0, c=0):
    z, y, x = np.meshgrid(*(np.arange(n) for n in SHAPE), indexing="ij")
    v = (x * 131 + y * 17 + z * 1031 + 700 * t + 300 * c) % 20011
    return v.astype(dtype) if np.dtype(dtype).kind != "f" else (v / 8.0).astype(dtype)


def v2(path, data, **kw):
    a = zarr.open_array(str(path), mode="w", shape=data.shape, dtype=data.dtype, zarr_format=2, **kw)
    a[:] = data
    return path


def v3(path, data, **kw):
    a = zarr.create_array(str(path), shape=data.shape, dtype=data.dtype, zarr_format=3, **kw)
    a[:] = data
    return path


Blosc = numcodecs.Blosc
V2_CASES = {
    "blosc-lz4-bitshuffle": dict(chunks=(5, 8, 7), compressor=Blosc(cname="lz4", shuffle=Blosc.BITSHUFFLE)),
    "blosc-lz4hc": dict(chunks=(5, 8, 7), compressor=Blosc(cname="lz4hc", shuffle=Blosc.SHUFFLE)),
    "blosc-zstd": dict(chunks=(5, 8, 7), compressor=Blosc(cname="zstd")),
    "blosc-zlib": dict(chunks=(5, 8, 7), compressor=Blosc(cname="zlib")),
    "blosc-blosclz": dict(chunks=(5, 8, 7), compressor=Blosc(cname="blosclz", shuffle=Blosc.NOSHUFFLE)),
    "zstd-F": dict(chunks=(4, 9, 11), compressor=numcodecs.Zstd(), order="F"),
    "zlib-slash": dict(chunks=(4, 9, 11), compressor=numcodecs.Zlib(), dimension_separator="/"),
    "gzip": dict(chunks=(4, 9, 11), compressor=numcodecs.GZip()),
    "raw": dict(chunks=(18, 21, 26), compressor=None),
}


@pytest.mark.parametrize("case", sorted(V2_CASES))
def test_v2_codecs_read_exactly(tmp_path, case):
    data = field()
    path = v2(tmp_path / "a.zarr", data, **V2_CASES[case])
    vol = inkray.load(path)
    assert vol.array.dtype == np.uint16
    np.testing.assert_array_equal(vol.array, data)


@pytest.mark.parametrize("dtype", ["<u2", ">u2", "|u1", "|i1", "<i2", ">i4", "<u8", "<f4", ">f8"])
def test_v2_dtypes_and_byte_orders(tmp_path, dtype):
    dt = np.dtype(dtype)
    base = field("int64") % (100 if dt.itemsize == 1 else 20011)
    data = (base / 8.0 if dt.kind == "f" else base).astype(dtype)
    path = v2(tmp_path / "a.zarr", data, chunks=(5, 8, 7), compressor=numcodecs.Zstd())
    vol = inkray.load(path)
    # Values are kept exactly (float64 ones become float32: these are exact there).
    np.testing.assert_array_equal(vol.array.astype(np.float64), data.astype(np.float64))


V3_CASES = {
    "blosc": dict(chunks=(5, 8, 7), compressors=[BloscCodec(cname="lz4", shuffle="shuffle")]),
    "zstd-big-endian": dict(chunks=(5, 8, 7), compressors=[ZstdCodec()], serializer=BytesCodec(endian="big")),
    "gzip-transpose": dict(chunks=(5, 8, 7), compressors=[GzipCodec()], filters=[TransposeCodec(order=(1, 2, 0))]),
    "sharded": dict(chunks=(3, 4, 5), shards=(6, 8, 10), compressors=[ZstdCodec()]),
    "uncompressed-v2-keys": dict(chunks=(5, 8, 7), compressors=None, chunk_key_encoding={"name": "v2", "separator": "."}),
}


@pytest.mark.parametrize("case", sorted(V3_CASES))
def test_v3_codecs_read_exactly(tmp_path, case):
    data = field()
    path = v3(tmp_path / "a.zarr", data, **V3_CASES[case])
    np.testing.assert_array_equal(inkray.load(path).array, data)


def test_missing_chunks_are_the_fill_value(tmp_path):
    a = zarr.open_array(str(tmp_path / "a.zarr"), mode="w", shape=SHAPE, dtype="uint16", chunks=(5, 8, 7),
                        zarr_format=2, fill_value=1234)
    want = np.full(SHAPE, 1234, dtype=np.uint16)
    want[5:10, 8:16, 0:7] = field()[5:10, 8:16, 0:7]
    a[5:10, 8:16, 0:7] = want[5:10, 8:16, 0:7]
    np.testing.assert_array_equal(inkray.load(tmp_path / "a.zarr").array, want)


def ome_image(path, version="0.4", t=0, c=0, levels=3):
    """An OME-Zarr image: zarr v2 with .zattrs (0.4) or v3 with attributes.ome (0.5); level l
    keeps every 2^l-th voxel along each axis; scale (z, y, x) 2, 0.5, 0.25 at level 0."""
    fmt = 2 if version == "0.4" else 3
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    lead = (["t"] if t else []) + (["c"] if c else [])
    datasets = []
    for level in range(levels):
        f = 2**level
        steps = [np.stack([field("uint16", s, k) for k in range(c)]) if c else field("uint16", s) for s in range(max(t, 1))]
        data = np.stack(steps) if t else steps[0]
        data = data[(slice(None),) * len(lead) + (slice(None, None, f),) * 3]
        arr = g.create_array(str(level), shape=data.shape, dtype="uint16", chunks=(1,) * len(lead) + (4, 8, 8),
                             **({"compressors": [BloscCodec(cname="lz4")]} if fmt == 3 else
                                {"compressors": [Blosc(cname="lz4")]}))
        arr[:] = data
        datasets.append({"path": str(level), "coordinateTransformations": [
            {"type": "scale", "scale": [1.0] * len(lead) + [2.0 * f, 0.5 * f, 0.25 * f]},
            {"type": "translation", "translation": [0.0] * len(lead) + [5.0, 6.0, 7.0]}]})
    axes = ([{"name": "t", "type": "time"}] if t else []) + ([{"name": "c", "type": "channel"}] if c else []) + [
        {"name": n, "type": "space", "unit": "micrometer"} for n in "zyx"]
    ms = [{"version": version, "axes": axes, "datasets": datasets}] if fmt == 2 else [{"axes": axes, "datasets": datasets}]
    if fmt == 2:
        g.attrs["multiscales"] = ms
    else:
        g.attrs["ome"] = {"version": version, "multiscales": ms}
    return path


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_ome_zarr_levels_spacing_origin_in_info(tmp_path, version):
    path = ome_image(tmp_path / "img.ome.zarr", version)
    out = run_inkray(["info", str(path)]).stdout
    assert "dims        26 x 21 x 18 " in out
    assert "spacing     0.25 x 0.5 x 2\n" in out
    assert "origin      7, 6, 5\n" in out
    data = field()
    assert f"range       {data.min()} .. {data.max()}\n" in out
    assert "level 0     26 x 21 x 18, spacing 0.25 x 0.5 x 2 (shown)" in out
    assert "level 2     7 x 6 x 5, spacing 1 x 2 x 8" in out
    # --level 1 halves the dims (rounding up, as the array written).
    out = run_inkray(["info", "--level", "1", str(path)]).stdout
    assert "dims        13 x 11 x 9 " in out
    vol = inkray.load(path, level=1)
    np.testing.assert_array_equal(vol.array, data[::2, ::2, ::2])
    assert vol.spacing == (4.0, 1.0, 0.5)
    assert [lv["shape"] for lv in vol.info["levels"]] == [(18, 21, 26), (9, 11, 13), (5, 6, 7)]


def test_ome_zarr_t_and_c_axes(tmp_path):
    path = ome_image(tmp_path / "tc.ome.zarr", "0.4", t=3, c=2, levels=2)
    vol = inkray.load(path, channel=1, time_step=2)
    np.testing.assert_array_equal(vol.array, field("uint16", 2, 1))
    assert vol.info["steps"] == 3 and vol.info["channels"] == 2
    out = run_inkray(["info", "--channel", "1", str(path)]).stdout
    assert "series" in out and "3 steps of 26x21x18 uint16" in out
    done = run_inkray(["info", "--channel", "2", str(path)], expect=2)
    assert "2 channels" in done.stderr and done.stderr.count("\n") == 1


def test_picture_equals_the_raw_volumes(tmp_path):
    data = field()
    raw = tmp_path / "same_26x21x18_uint16.raw"
    data.tofile(raw)
    path = v3(tmp_path / "same.zarr", data, chunks=(3, 4, 5), shards=(6, 8, 10), compressors=[ZstdCodec()])
    look = ["--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--size", "64x48", "--iso", "9000",
            "--quiet"]
    run_inkray([*look, "--png", str(tmp_path / "raw.png"), str(raw)])
    run_inkray([*look, "--png", str(tmp_path / "zarr.png"), str(path)])
    np.testing.assert_array_equal(read_png(tmp_path / "raw.png"), read_png(tmp_path / "zarr.png"))


def test_corrupt_chunk_and_lying_metadata_exit_2(tmp_path):
    path = v2(tmp_path / "bad.zarr", field(), chunks=(5, 8, 7), compressor=Blosc(cname="lz4"))
    chunk = path / "1.0.2"
    data = bytearray(chunk.read_bytes())
    data[12:16] = b"\xff\xff\xff\x7f"
    chunk.write_bytes(bytes(data))
    done = run_inkray(["info", str(path)], expect=2)
    assert "chunk 1.0.2" in done.stderr and "blosc" in done.stderr and done.stderr.count("\n") == 1

    path = v2(tmp_path / "lying.zarr", field(), chunks=(5, 8, 7), compressor=numcodecs.Zstd())
    meta = json.loads((path / ".zarray").read_text())
    meta["chunks"] = [5, 8, 9]
    (path / ".zarray").write_text(json.dumps(meta))
    done = run_inkray(["info", str(path)], expect=2)
    assert "chunk 0.0.0" in done.stderr and "expected 720" in done.stderr

    path = v2(tmp_path / "trunc.zarr", field(), chunks=(5, 8, 7), compressor=numcodecs.Zstd())
    chunk = path / "2.1.0"
    chunk.write_bytes(chunk.read_bytes()[:-9])
    done = run_inkray(["info", str(path)], expect=2)
    assert "chunk 2.1.0" in done.stderr and "zstd" in done.stderr


def test_hdf5_dataset_spacing_and_series(tmp_path):
    h5py = pytest.importorskip("h5py", reason="h5py writes the HDF5 test files")
    data = field("int16")
    with h5py.File(tmp_path / "scan.h5", "w") as f:
        d = f.create_dataset("exchange/data", data=data, chunks=(4, 8, 8), compression="gzip")
        d.attrs["element_size_um"] = [3.0, 2.0, 1.0]
        f.create_dataset("series", data=np.stack([field(">u2", t) for t in range(2)]))
    vol = inkray.load(f"{tmp_path / 'scan.h5'}:/exchange/data")
    np.testing.assert_array_equal(vol.array, data)
    assert vol.spacing == (3.0, 2.0, 1.0)
    out = run_inkray(["info", f"{tmp_path / 'scan.h5'}:/exchange/data"]).stdout
    assert "spacing     1 x 2 x 3\n" in out
    done = run_inkray(["info", str(tmp_path / "scan.h5")], expect=2)
    assert "/exchange/data" in done.stderr and "/series" in done.stderr
    np.testing.assert_array_equal(inkray.load(f"{tmp_path / 'scan.h5'}:/series", time_step=1).array, field("uint16", 1))
    out = run_inkray(["info", f"{tmp_path / 'scan.h5'}:/series"]).stdout
    assert "2 steps of 26x21x18 uint16" in out
