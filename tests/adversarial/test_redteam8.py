"""The eighth red team's breaks (tests/adversarial/redteam8/README.md). Each test asserts the safe
behaviour; those of breaks still open are marked xfail(strict=True) and flip when fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "redteam8"

HOLDER = r"""
import mmap, os, sys, time
kind, size = sys.argv[1], 64 << 20
if kind == "shared anonymous":
    held = mmap.mmap(-1, size)
    for offset in range(0, size, 4096):
        held[offset] = 1
elif kind == "unlinked, open":
    held = open("held", "wb")
    os.posix_fallocate(held.fileno(), 0, size)
    os.unlink("held")
elif kind == "unlinked, mapped":
    with open("held", "w+b") as fh:
        os.posix_fallocate(fh.fileno(), 0, size)
        held = mmap.mmap(fh.fileno(), 4096)
    os.unlink("held")
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("kind", ["shared anonymous", "unlinked, open", "unlinked, mapped"])
def test_memory_only_a_runners_processes_keep_counts_as_theirs(tmp_path, kind):
    """#1, #2: 64 MiB held as shared anonymous memory (its pages are ``RssShmem``, which the measure
    subtracted, and no file of it is open), or in a file of the runner's directory that it unlinked
    while it keeps it open or mapped (below no directory any more), did not count. Now every object
    that only the runner's processes keep, by a descriptor or a mapping, counts."""
    from tritongym.evaluate.judge.runners import tree_memory_bytes

    proc = subprocess.Popen([sys.executable, "-c", HOLDER, kind], cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        held = tree_memory_bytes(proc.pid, directory=str(tmp_path))
    finally:
        proc.kill()
        proc.wait()
    assert held >= 64 << 20, held >> 20


def test_a_mapping_whose_object_cannot_be_read_counts_its_resident_pages(tmp_path):
    """#2 where the judge may not read ``map_files`` (no privilege): the mapping's resident size, from
    ``smaps``, stands for its object."""
    from tritongym.evaluate.judge.runners import _resident_of

    proc = subprocess.Popen([sys.executable, "-c", HOLDER, "shared anonymous"], cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        lines = Path(f"/proc/{proc.pid}/maps").read_bytes().splitlines()
        ranges = {line.split()[0] for line in lines if line.endswith(b"/dev/zero (deleted)")}
        files: dict = {}
        _resident_of(proc.pid, ranges, files)
    finally:
        proc.kill()
        proc.wait()
    assert ranges and sum(files.values()) >= 64 << 20, files


def test_space_held_in_unlinked_files_counts_as_the_runners_memory(warm_env):
    """#1: `holds_unlinked_files.py` reserved 1200 MiB in six files of its directory, unlinked them and
    kept them open, with a 1024 MiB limit: `ok` (red team 7 #5's measure reads the directory)."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "holds_unlinked_files.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, memory_limit_mb=1024)
    result = warm_env.submit(small_problem("vector_add"), source, config).result()
    assert result.verdict.value == "out_of_memory", result.feedback


CLASSES = """
import numpy as np
import triton
import triton.language as tl

STASH = []


@triton.jit
def helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def calls_given(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BODY: tl.constexpr):
    BODY(x_ptr, out_ptr, n, BLOCK)


def host():
    if STASH:  # a launch, not the frontend's compile
        np.multiply(STASH[0].numpy(), 2.0, out=STASH[1].numpy())


class ByNew:
    def __new__(cls, *args):
        host()


class ByInit:
    def __init__(self, *args):
        host()


class Meta(type):
    def __call__(cls, *args):
        host()


class ByMetaclass(metaclass=Meta):
    pass


class ByBuiltin:
    __init__ = np.multiply
"""

CLASSES_PROBE = """
import json, runpy, sys
import torch
from tritongym.evaluate.guards import CandidateText, LaunchMonitor

path = sys.argv[1]
text = CandidateText.read(path)
module = runpy.run_path(path)
x = torch.arange(32, dtype=torch.float32)


def launch(body):
    out = torch.zeros_like(x)
    module["STASH"][:] = [x, out]
    try:
        with LaunchMonitor(path, text=text) as monitor:
            module["calls_given"][(2,)](x, out, 32, BLOCK=16, BODY=body)
    except Exception as exc:  # Triton's frontend refused it
        return f"refused: {type(exc).__name__}"
    return {"own": monitor.launches, "foreign": sum(monitor.foreign.values()), "factor": float(out[1] / x[1])}


names = ("helper", "ByNew", "ByInit", "ByMetaclass", "ByBuiltin")
print(json.dumps({name: launch(module[name]) for name in names}))
"""


def test_a_class_a_kernel_calls_is_host_code(tmp_path):
    """#4: a class of the candidate's passed as a constexpr (its ``__new__``, ``__init__`` or
    metaclass ``__call__`` running NumPy) passed the launch monitor's check of arguments, which let
    every class through: NumPy ran inside the candidate's own launch. Now a class whose construction
    runs Python that is not a library's makes the launch foreign; a JIT function stays own."""
    path = tmp_path / "solution.py"
    path.write_text(CLASSES)
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", CLASSES_PROBE, str(path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["helper"] == {"own": 1, "foreign": 0, "factor": 3.0}, seen
    for name in ("ByNew", "ByInit", "ByMetaclass", "ByBuiltin"):
        result = seen[name]
        assert isinstance(result, str) or not result["own"], (name, seen)


def test_a_class_passed_as_a_constexpr_is_not_the_kernels_work(warm_env):
    """#4 end to end (softmax, forbid): `passes_a_class_as_constexpr.py` was `ok`; now `hack_no_triton`."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "passes_a_class_as_constexpr.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, torch_compute="forbid")
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict.category.value == "hack", result.feedback
