"""`python -m inkray ARGS` is the program: the same output, files and exit status as the
`inkray` binary for the same command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import inkray
from conftest import read_png, run_inkray


def python_m(args, cwd=None):
    return subprocess.run([sys.executable, "-m", "inkray", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_version_and_info_are_the_programs():
    for args in (["--version"], ["info", "builtin:sphere:24"], ["--headless", "--help"]):
        ours, theirs = python_m(args), run_inkray(args)
        assert ours.returncode == 0 and ours.stdout == theirs.stdout, args


def test_bad_input_exits_2_with_the_programs_message():
    ours = python_m(["--headless", "--frames", "zero"])
    theirs = run_inkray(["--headless", "--frames", "zero"], expect=2)
    assert ours.returncode == 2 and ours.stderr == theirs.stderr and "--frames 'zero'" in ours.stderr


def test_headless_run_writes_the_same_image(tmp_path):
    args = ["--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1", "--no-stages", "--quiet",
            "--size", "48x40", "--iso", "0"]
    done = python_m([*args, "--png", str(tmp_path / "ours.png"), "builtin:sphere:32"])
    assert done.returncode == 0, done.stderr
    run_inkray([*args, "--png", str(tmp_path / "theirs.png"), "builtin:sphere:32"])
    ours = read_png(tmp_path / "ours.png")
    np.testing.assert_array_equal(ours, read_png(tmp_path / "theirs.png"))
    volume = inkray.load("builtin:sphere:32").array
    np.testing.assert_array_equal(ours, inkray.render(volume, 0.0, size=(48, 40), device="cpu").image)


def test_the_package_ships_the_program():
    assert inkray.binary_path().is_file()
