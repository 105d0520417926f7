"""`make demo` on a fresh machine: the Python version is checked before anything is installed, and
without a GPU the CPU build of torch is asked for explicitly. Python and pip are stubs that log."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

STUB = """#!/bin/sh
echo "$@" >> {log}
"""
OLD_PYTHON = """#!/bin/sh
exec {python} -c "import sys
V = type('V', (tuple,), {{'major': 3, 'minor': 10}})
sys.version_info = V((3, 10, 0))
exec(sys.argv[1])" "$2"
"""
"""A Python 3.10 as far as the Makefile's check can tell: it runs ``-c CODE`` with that version_info."""


def _make(tmp_path: Path, python: Path | None, *, gpu: bool) -> tuple[subprocess.CompletedProcess, str]:
    """``make install`` with pip (and python, when None) replaced by a stub that logs its arguments."""
    venv = tmp_path / "venv"
    venv.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if gpu:
        (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200'\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
    log = tmp_path / "log"
    pip = tmp_path / "pip-stub"
    pip.write_text(STUB.format(log=log))
    pip.chmod(0o755)
    result = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "install", f"PYTHON={python or pip}", f"PY={pip}", f"VENV={venv}"],
        capture_output=True, text=True, env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"},
    )  # fmt: skip
    return result, log.read_text() if log.exists() else ""


def test_an_old_python_is_refused_before_anything_is_installed(tmp_path):
    old = tmp_path / "python3.10"
    old.write_text(OLD_PYTHON.format(python=shutil.which("python3")))
    old.chmod(0o755)
    result, log = _make(tmp_path, old, gpu=False)
    assert result.returncode != 0
    assert "needs Python >= 3.11" in result.stderr and "is 3.10" in result.stderr
    assert log == ""  # no venv, no pip


@pytest.mark.parametrize("gpu", [False, True])
def test_torch_build_follows_the_machine(tmp_path, gpu):
    result, log = _make(tmp_path, None, gpu=gpu)
    assert result.returncode == 0, result.stderr
    assert log.startswith("-c import sys")  # the version check comes first
    torch_line = next(line for line in log.splitlines() if "torch==" in line)
    if gpu:
        assert "+cpu" not in torch_line and "CUDA build" in result.stdout
    else:
        assert "torch==2.13.0+cpu" in torch_line and "download.pytorch.org/whl/cpu" in torch_line
        assert "CPU build" in result.stdout
    assert log.splitlines()[-1].startswith("-m pip install -q -e .[dev]")
