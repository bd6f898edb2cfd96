"""Shared helpers of the Python package's tests: the inkray program to compare with, a PNG reader
(the program writes its images as PNG), the test volumes, and the GPU libraries when present.

The program compared with is $INKRAY_BINARY when set (CI points it at the CTest build's
build/inkray, an independent build of the same sources), else the one installed with the package.
"""

from __future__ import annotations

import os
import struct
import subprocess
import zlib
from pathlib import Path
from typing import List, Optional

import numpy as np
import pytest

import inkray

REPO = Path(__file__).resolve().parents[2]
REAL_DATA = REPO / "tests" / "data" / "real"
SAMPLES = REPO / "tests" / "data" / "samples"


def inkray_binary() -> Path:
    given = os.environ.get("INKRAY_BINARY")
    return Path(given) if given else inkray.binary_path()


def run_inkray(args: List[str], expect: int = 0, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """Runs the program; fails the test with its output unless it exits with `expect`."""
    done = subprocess.run([str(inkray_binary()), *args], capture_output=True, text=True, cwd=cwd, timeout=300)
    if done.returncode != expect:
        pytest.fail(f"inkray {' '.join(args)} exited {done.returncode}, expected {expect}:\n{done.stdout}\n{done.stderr}")
    return done


def read_png(path: Path) -> np.ndarray:
    """An 8-bit RGBA, non-interlaced PNG (what the program writes) as (height, width, 4) uint8."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    assert header is not None
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color == 6 and interlace == 0, f"{path}: expected 8-bit RGBA, not interlaced"
    raw = zlib.decompress(idat)
    stride, bpp = width * 4, 4
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw[start + 1 : start + 1 + stride], dtype=np.uint8).astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + previous) & 0xFF
        else:  # Sub (1), Average (3) and Paeth (4) depend on the left neighbour: byte by byte
            row = np.zeros(stride, dtype=np.int32)
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                up = previous[i]
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up) // 2
                elif kind == 4:
                    upleft = previous[i - bpp] if i >= bpp else 0
                    p = left + up - upleft
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else upleft
                else:
                    raise AssertionError(f"{path}: unknown PNG filter {kind}")
                row[i] = (line[i] + pred) & 0xFF
        out[y] = row
        previous = row
    return out.reshape(height, width, 4)


def sphere(n: int, dtype=np.float32) -> np.ndarray:
    """builtin:sphere:N's field, (z, y, x): R - distance to the centre, R = 0.35 N (positive
    inside); integer types are scaled and offset to use their range."""
    c = (n - 1) / 2.0
    k, j, i = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    field = (0.35 * n - np.sqrt((i - c) ** 2 + (j - c) ** 2 + (k - c) ** 2)).astype(np.float32)
    if dtype == np.float32:
        return field
    if dtype == np.uint8:
        return np.clip(np.round(128 + 4 * field), 0, 255).astype(np.uint8)
    if dtype == np.uint16:
        return np.clip(np.round(30000 + 400 * field), 0, 65535).astype(np.uint16)
    return np.clip(np.round(400 * field), -32768, 32767).astype(np.int16)


def iso_for(dtype) -> float:
    """The sphere's surface in the units sphere() gives it (between voxel values)."""
    return {np.float32: 0.0, np.uint8: 128.5, np.uint16: 30000.5, np.int16: 0.5}[dtype]


def raw_name(dtype) -> str:
    return np.dtype(dtype).name


def gpu_available() -> bool:
    return inkray.cuda_device_count() > 0


requires_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA device (GPU tests run on the GPU machine)")


@pytest.fixture
def cupy():
    if not gpu_available():
        pytest.skip("no CUDA device")
    return pytest.importorskip("cupy")


@pytest.fixture
def torch_cuda():
    if not gpu_available():
        pytest.skip("no CUDA device")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch
