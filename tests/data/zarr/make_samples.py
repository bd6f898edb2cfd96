"""Writes the small Zarr, OME-Zarr and HDF5 samples in this folder (tests/data/zarr/) with
zarr-python, numcodecs and h5py, so that the C tests read files written by the field's own
libraries. Every value is value(x, y, z, t, c) below, which tests/data/test_zarr.c computes
too. Run from anywhere: python3 make_samples.py (zarr >= 3, numcodecs, h5py)."""
import json
import os
import shutil

import h5py
import numcodecs
import numpy as np
import zarr
from zarr.codecs import (BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec,
                         TransposeCodec, ZstdCodec)

HERE = os.path.dirname(os.path.abspath(__file__))
NX, NY, NZ = 14, 12, 10


def value(x, y, z, t=0, c=0):
    return (x * 37 + y * 101 + z * 211) % 4000 + 100 * t + 50 * c


def volume(dtype, t=0, c=0):
    z, y, x = np.meshgrid(np.arange(NZ), np.arange(NY), np.arange(NX), indexing="ij")
    v = value(x, y, z, t, c)
    dt = np.dtype(dtype)
    if dt.kind == "i" and dt.itemsize == 1:
        v = v % 100 - 50
    elif dt.kind == "u" and dt.itemsize == 1:
        v = v % 256
    elif dt.kind == "f":
        v = v / 4.0
    return v.astype(dtype)


def fresh(name):
    path = os.path.join(HERE, name)
    shutil.rmtree(path, ignore_errors=True)
    if os.path.exists(path):
        os.remove(path)
    return path


def v2(name, dtype="<u2", chunks=(4, 7, 8), **kw):
    z = zarr.open_array(fresh(name), mode="w", shape=(NZ, NY, NX), dtype=dtype, chunks=chunks,
                        zarr_format=2, **kw)
    z[:] = volume(dtype)


def v3(name, dtype="uint16", chunks=(4, 7, 8), **kw):
    z = zarr.create_array(fresh(name), shape=(NZ, NY, NX), dtype=dtype, chunks=chunks,
                          zarr_format=3, **kw)
    z[:] = volume(dtype)


Blosc = numcodecs.Blosc
v2("v2_blosc_lz4_bitshuffle.zarr", compressor=Blosc(cname="lz4", shuffle=Blosc.BITSHUFFLE))
v2("v2_blosc_lz4hc.zarr", compressor=Blosc(cname="lz4hc", shuffle=Blosc.SHUFFLE))
v2("v2_blosc_zstd.zarr", compressor=Blosc(cname="zstd", shuffle=Blosc.NOSHUFFLE))
v2("v2_blosc_zlib.zarr", compressor=Blosc(cname="zlib", shuffle=Blosc.SHUFFLE))
v2("v2_blosc_blosclz.zarr", compressor=Blosc(cname="blosclz", shuffle=Blosc.BITSHUFFLE))
v2("v2_zstd_order_f.zarr", compressor=numcodecs.Zstd(), order="F")
v2("v2_zlib_slash.zarr", compressor=numcodecs.Zlib(), dimension_separator="/")
v2("v2_gzip_big_endian.zarr", dtype=">u2", compressor=numcodecs.GZip())
for dt in ["|i1", "|u1", "<i2", "<i4", "<u4", ">i8", "<u8", "<f4", ">f4", "<f8"]:
    v2("v2_dtype_%s%s.zarr" % (np.dtype(dt).name, "_be" if dt[0] == ">" else ""), dtype=dt, compressor=None)
z = zarr.open_array(fresh("v2_missing_chunks.zarr"), mode="w", shape=(NZ, NY, NX), dtype="<u2",
                    chunks=(4, 7, 8), zarr_format=2, fill_value=9, compressor=numcodecs.Zlib())
z[0:4, 0:5, 0:6] = volume("<u2")[0:4, 0:5, 0:6]

v3("v3_blosc.zarr", compressors=[BloscCodec(cname="lz4", shuffle="bitshuffle")])
v3("v3_zstd_big_endian.zarr", compressors=[ZstdCodec()], serializer=BytesCodec(endian="big"))
v3("v3_gzip_transpose.zarr", compressors=[GzipCodec()], filters=[TransposeCodec(order=(2, 0, 1))])
v3("v3_crc32c.zarr", compressors=[ZstdCodec(), Crc32cCodec()])
v3("v3_sharded.zarr", chunks=(2, 5, 3), shards=(4, 10, 6), compressors=[ZstdCodec()])
v3("v3_v2_keys_float32.zarr", dtype="float32", chunk_key_encoding={"name": "v2", "separator": "."},
   compressors=None)

# OME-Zarr 0.4: zarr v2, axes t, c, z, y, x, three levels (each halves x and y, and z at level 2).
root = fresh("ome_04_tczyx.zarr")
g = zarr.open_group(root, mode="w", zarr_format=2)
levels, shape = [], (NZ, NY, NX)
for level, (fz, fy, fx) in enumerate([(1, 1, 1), (1, 2, 2), (2, 4, 4)]):
    data = np.stack([np.stack([volume("<u2", t, c)[::fz, ::fy, ::fx] for c in range(2)]) for t in range(3)])
    a = g.create_array(str(level), shape=data.shape, dtype="<u2", chunks=(1, 1, 4, 7, 8),
                       compressors=[Blosc(cname="lz4", shuffle=Blosc.SHUFFLE)])
    a[:] = data
    levels.append({"path": str(level), "coordinateTransformations": [
        {"type": "scale", "scale": [1.0, 1.0, 2.0 * fz, 0.5 * fy, 0.5 * fx]},
        {"type": "translation", "translation": [0.0, 0.0, 10.0, 20.0, 30.0]}]})
g.attrs["multiscales"] = [{"version": "0.4", "name": "sample", "axes": [
    {"name": "t", "type": "time", "unit": "second"}, {"name": "c", "type": "channel"},
    {"name": "z", "type": "space", "unit": "micrometer"}, {"name": "y", "type": "space", "unit": "micrometer"},
    {"name": "x", "type": "space", "unit": "micrometer"}], "datasets": levels}]

# OME-Zarr 0.5: zarr v3, axes z, y, x, two levels, sharded level 0.
root = fresh("ome_05_zyx.zarr")
g = zarr.open_group(root, mode="w", zarr_format=3)
levels = []
for level, f in enumerate([1, 2]):
    data = volume("uint16")[::f, ::f, ::f]
    kw = {"shards": (4, 10, 12)} if level == 0 else {}
    a = g.create_array(str(level), shape=data.shape, dtype="uint16", chunks=(2, 5, 6),
                       compressors=[ZstdCodec()], dimension_names=["z", "y", "x"], **kw)
    a[:] = data
    levels.append({"path": str(level), "coordinateTransformations": [
        {"type": "scale", "scale": [3.0 * f, 1.5 * f, 1.5 * f]}]})
g.attrs["ome"] = {"version": "0.5", "multiscales": [{"name": "sample", "axes": [
    {"name": "z", "type": "space", "unit": "nanometer"}, {"name": "y", "type": "space", "unit": "nanometer"},
    {"name": "x", "type": "space", "unit": "nanometer"}], "datasets": levels}]}

# Broken stores: a chunk with a bad blosc header, a truncated zstd frame, metadata whose chunk
# shape disagrees with the chunks written.
v2("bad_blosc_header.zarr", compressor=Blosc(cname="lz4"))
with open(os.path.join(HERE, "bad_blosc_header.zarr", "0.0.0"), "r+b") as f:
    f.seek(12)
    f.write(b"\xff\xff\xff\x7f")
v2("bad_zstd_truncated.zarr", compressor=numcodecs.Zstd())
chunk = os.path.join(HERE, "bad_zstd_truncated.zarr", "1.1.1")
data = open(chunk, "rb").read()
open(chunk, "wb").write(data[: len(data) // 2])
v2("bad_chunk_shape.zarr", compressor=numcodecs.Zlib())
meta = os.path.join(HERE, "bad_chunk_shape.zarr", ".zarray")
m = json.load(open(meta))
m["chunks"] = [4, 7, 9]
json.dump(m, open(meta, "w"), indent=4)

# HDF5: a volume with element_size_um, chunked and gzip-compressed; a 4-D time series; a file of
# two volumes (which must be named).
with h5py.File(fresh("h5_gzip.h5"), "w") as f:
    d = f.create_dataset("exchange/data", data=volume("<u2"), chunks=(4, 5, 6), compression="gzip", shuffle=True)
    d.attrs["element_size_um"] = np.array([2.0, 0.5, 0.25])
with h5py.File(fresh("h5_series.h5"), "w") as f:
    f.create_dataset("t", data=np.stack([volume(">i2", t) for t in range(3)]))
with h5py.File(fresh("h5_two.h5"), "w") as f:
    f.create_dataset("a", data=volume("<f4"))
    f.create_dataset("b/c", data=volume("|u1"))
