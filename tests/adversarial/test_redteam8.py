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


ROUTES = """
import numpy as np
import triton
import triton.language as tl

STASH = []
HELD = tl.constexpr(STASH)
FETCH = tl.constexpr(getattr)
SIZES = tl.constexpr((8, 16))
ACT = tl.constexpr("triple")


class Rows(list):
    def __getitem__(self, i):
        if list.__len__(self):
            np.copyto(list.__getitem__(self, 1), list.__getitem__(self, 0))
        return 0


ROWS = Rows()
VIEW = tl.constexpr(ROWS)


@triton.jit
def fn(x):  # a helper whose name is also an attribute of every JIT function (its Python function's)
    return x * 3.0


@triton.jit
def honest(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if ACT == "triple":
        y = getattr(tl, "maximum")(fn(x), x)
    else:
        y = x
    if SIZES[1] == BLOCK:
        tl.store(out_ptr + offs, y.to(tl.float32), mask=mask)


@triton.jit
def computed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    getattr(np, HELD[2])(HELD[1], HELD[0])


@triton.jit
def given_name(x_ptr, out_ptr, n, BLOCK: tl.constexpr, NAME: tl.constexpr):
    getattr(np, NAME)(HELD[1], HELD[0])


@triton.jit
def renamed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    FETCH(np, HELD[2])(HELD[1], HELD[0])


@triton.jit
def namespace(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    np.__dict__[HELD[2]](HELD[1], HELD[0])


@triton.jit
def item_called(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    HELD[3](HELD[1], HELD[0])


@triton.jit
def item_attribute(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    HELD[3].f(HELD[1], HELD[0])


@triton.jit
def indexed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    VIEW[0]


@triton.jit
def executes(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.core.builtins.exec(HELD[3], HELD[4])


@triton.jit
def lookup_by_string(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    getattr(tl.core.builtins, "getattr")(np, HELD[2])(HELD[1], HELD[0])


@triton.jit
def lookup_held(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    getattr(tl, "maximum")  # getattr spelled once, as it may be
    HELD[3](np, HELD[2])(HELD[1], HELD[0])
"""

ROUTES_PROBE = """
import json, runpy, sys, types
import numpy as np
import torch
from tritongym.evaluate.guards import CandidateText, LaunchMonitor

path = sys.argv[1]
text = CandidateText.read(path)
module = runpy.run_path(path)
x = torch.arange(32, dtype=torch.float32)
EXTRA = {
    "item_called": [np.copyto],
    "item_attribute": [types.SimpleNamespace(f=np.copyto)],
    "executes": ["import numpy; numpy.copyto(S[1], S[0])", {"S": []}],
    "lookup_held": [getattr],
}


def launch(name):
    out = torch.zeros_like(x)
    held = [x.numpy() * 2.0, out.numpy(), "copyto"]
    module["STASH"][:] = held + EXTRA.get(name, [])
    if name == "executes":
        module["STASH"][4]["S"] = held
    module["ROWS"][:] = held if name == "indexed" else []
    meta = {"NAME": "copyto"} if name == "given_name" else {}
    try:
        with LaunchMonitor(path, text=text) as monitor:
            module[name][(2,)](x, out, 32, BLOCK=16, **meta)
    except Exception as exc:  # Triton's frontend refused it
        return f"refused: {type(exc).__name__}"
    finally:
        module["STASH"].clear()
        module["ROWS"].clear()
    return {"own": monitor.launches, "foreign": list(monitor.foreign), "factor": float(out[1] / x[1])}


names = ("honest", "computed", "given_name", "renamed", "namespace", "item_called", "item_attribute", "indexed",
         "executes", "lookup_by_string", "lookup_held")
print(json.dumps({name: launch(name) for name in names}))
"""


def test_a_kernel_reaching_host_code_through_data_is_not_its_own(tmp_path):
    """#5 and its kin: a kernel of the text calling NumPy's ``copyto`` by a name the ownership rule
    cannot follow (``getattr`` with a name from a constexpr list or argument, ``getattr`` held in a
    constexpr, a module's ``__dict__``), held in data (a list's item, an attribute of an item), behind
    a ``__getitem__`` of the candidate's class, through ``exec`` reached by an attribute chain, or
    through ``getattr`` itself reached by a string or held in data, ran NumPy inside an own launch
    (``ok``). Now each launch is foreign (named with why), while a kernel
    using ``getattr`` with a literal name, constexpr branching and a constexpr tuple's item stays own."""
    path = tmp_path / "solution.py"
    path.write_text(ROUTES)
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", ROUTES_PROBE, str(path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen.pop("honest") == {"own": 1, "foreign": [], "factor": 3.0}, seen
    for name, result in seen.items():
        assert isinstance(result, str) or (result["own"] == 0 and len(result["foreign"]) == 1), (name, seen)
    assert "calls getattr with a name that is not a string literal" in seen["computed"]["foreign"][0], seen
    assert "getattr" in seen["given_name"]["foreign"][0] and "getattr" in seen["renamed"]["foreign"][0], seen
    assert "__dict__" in seen["namespace"]["foreign"][0], seen
    assert "Rows" in seen["indexed"]["foreign"][0], seen
    for name in ("lookup_by_string", "lookup_held"):  # getattr reached as a value, called where no name shows
        assert "getattr as a value" in seen[name]["foreign"][0], seen


NOT_LITERAL = "calls getattr with a name that is not a string literal"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def k(x):\n    return getattr(tl, 'maximum')(x, x)\n", None),
        ("def k(x, NAME):\n    return getattr(np, NAME)(x)\n", NOT_LITERAL),
        ("def k(x):\n    return getattr(np, name='copyto')\n", NOT_LITERAL),
        ("def k(x):\n    return getattr(np, 'copy' + 'to')\n", NOT_LITERAL),
        ("def k(x):\n    return getattr(x, '__class__')\n", "calls getattr with the name __class__"),
        ("def k(x):\n    return tl.core.builtins.hasattr(x, H[0])\n", NOT_LITERAL.replace("getattr", "hasattr")),
        ("def k(x):\n    return F(getattr, x)\n", "uses getattr other than called with a string literal"),
        ("def k(x):\n    return ().__class__\n", "reads the attribute __class__"),
        ("def k(x):\n    return __builtins__\n", "reads the name __builtins__"),
        ("def k(x:\n", "has a source that does not parse"),
    ],
)
def test_what_a_kernels_source_reaches_by_data_is_named(source, reason):
    """#5's rule on a kernel's source: ``getattr``/``hasattr`` only with a literal name, no dunders."""
    from tritongym.evaluate.guards import _source_reflection

    assert _source_reflection(source) == reason


def test_only_harmless_c_functions_and_classes_without_python_pass():
    """#5's rule on values: builtins but the reflective ones, ``math``'s and plain values' methods pass;
    another module's C function, or an object of a class holding Python (a ``__getitem__``, a
    property), is host code."""
    import math
    import operator

    import numpy as np

    from tritongym.evaluate.guards import _builtin_passable, _passable, _runs_no_python

    assert all(_builtin_passable(f) for f in (min, len, getattr, math.log2, (1, 2).index, tuple.index, dict.fromkeys))
    assert not any(_builtin_passable(f) for f in (exec, eval, vars, setattr, np.empty, operator.attrgetter))

    class Indexed(list):
        def __getitem__(self, i):
            return 0

    class Computed:
        value = property(lambda self: 0)

    class Plain(tuple):
        pass

    assert _runs_no_python(list) and _runs_no_python(Plain) and _passable(Plain((1,)))
    assert not _runs_no_python(Indexed) and not _passable(Indexed()) and not _passable(Computed())


def test_a_kernel_reaching_numpy_by_a_computed_name_is_not_its_work(warm_env):
    """#5 end to end (softmax, forbid): `reaches_numpy_by_a_computed_name.py` was `ok`; now a hack
    verdict whose feedback says why."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "reaches_numpy_by_a_computed_name.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, torch_compute="forbid")
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict.category.value == "hack", result.feedback
    assert "getattr with a name that is not a string literal" in result.feedback, result.feedback
