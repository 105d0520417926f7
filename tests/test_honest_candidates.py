"""Honest candidates in the idioms real solutions are written in (tests/candidates/honest/, one file
per idiom) must be judged ``ok`` with the default settings: every hardening of the guards risks
refusing honest code, and an environment that refuses honest kernels trains models away from good
solutions. Each file's header names its problem (a bundled one at its small sizes, or a
purpose-written reference in ``honest/problems/``, shrunk as the CPU shrinks a problem, a second
size judged, where it says ``# sizes: full``), the findings the documented policy gives it
where it legitimately leaves part of the work to PyTorch, ``# device: gpu`` where Triton's
interpreter cannot run it, ``# triton: <release>`` / ``# torch: <release>`` where the idiom's API is newer than
some supported release, and ``# open: <why>`` where the judge still refuses it (xfail, strict: it flips when fixed),
``# open on gpu: <why>`` where it does so on a GPU only.

The guards' fixes that these found are tested here too, with the attack each guard was built for
kept closed: a launch's grid is forward's host code (a grid that writes the answer is caught), and
a member of a plain enum is data (an enum of the candidate's holding Python is not); and several
autotuning configs run under the interpreter with no GPU."""

from __future__ import annotations

import enum
import functools
import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch
import triton

from helpers import DEVICE, run_candidate
from tritongym.evaluate import EvalConfig, Verdict, guards
from tritongym.problems import Problem, find_problem

HONEST = Path(__file__).parent / "candidates" / "honest"
ADVERSARIAL = Path(__file__).parent / "adversarial" / "candidates"


def _header(text: str, key: str) -> str | None:
    found = re.search(rf"^# {key}: (.+)$", text, re.M)
    return found.group(1).strip() if found else None


def _problem(name: str) -> Problem:
    reference = HONEST / "problems" / f"{name}.py"
    if not reference.exists():
        return find_problem(name).small()
    source = reference.read_text()
    problem = Problem(name=name, source=source, entry_point=_header(source, "entry_point") or "Model")
    return problem.small() if _header(source, "sizes") == "full" else problem  # shrunk as the CPU shrinks it


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def _marks(text: str) -> list:
    marks = [pytest.mark.gpu] if _header(text, "device") == "gpu" else []
    for package, version in (("triton", triton.__version__), ("torch", torch.__version__)):
        needs = _header(text, package)  # the first release with the API the idiom uses
        if needs and _release(version) < _release(needs):
            marks.append(pytest.mark.skip(reason=f"needs {package} {needs} or later (here {version})"))
    if _header(text, "open"):  # a refusal of honest code that no fix yet removes without reopening an attack
        marks.append(pytest.mark.xfail(strict=True, reason=_header(text, "open")))
    if DEVICE == "cuda" and _header(text, "open on gpu"):  # the same, on a GPU only
        marks.append(pytest.mark.xfail(strict=True, reason=_header(text, "open on gpu")))
    return marks


def _cases() -> list:
    return [pytest.param(path.stem, marks=_marks(path.read_text())) for path in sorted(HONEST.glob("*.py"))]


@pytest.mark.parametrize("name", _cases())
def test_honest_candidate_is_judged_ok(warm_env, name):
    source = (HONEST / f"{name}.py").read_text()
    problem = _header(source, "problem")
    assert problem, f"{name}.py names no problem"
    result = warm_env.submit(_problem(problem), source, EvalConfig(device=DEVICE)).result()
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    expected = sorted((_header(source, "findings") or "").split(", ")) if _header(source, "findings") else []
    assert sorted(f.check for f in result.findings) == expected, result.findings


def test_the_corpus_covers_purpose_written_problems():
    """Every purpose-written reference is some candidate's problem (none is left unused)."""
    named = {_header(p.read_text(), "problem") for p in HONEST.glob("*.py")}
    assert {p.stem for p in (HONEST / "problems").glob("*.py")} <= named


def test_a_grid_that_writes_the_answer_is_host_code(warm_env):
    """The grid is resolved outside the own launch and, in the hollow forward, after the launch's
    buffers are poisoned: a grid computing the output with NumPy beside an idle kernel is caught."""
    run = functools.partial(run_candidate, directory=ADVERSARIAL, env=warm_env)
    result = run("grid_does_the_work", "vector_add")
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    # the trials see it first: the grid wrote the answer into the output before the launch was handed it
    assert "already held the correct output when handed to one, before it ran, where no kernel had" in result.feedback


@pytest.mark.parametrize("name", ["defaultdict_factory_does_the_work", "mapping_proxy_does_the_work"])
def test_a_c_wrapper_handing_the_kernels_operation_on_is_host_code(warm_env, name):
    """A constexpr whose C type holds no Python but hands the kernel's indexing on to what it holds (a
    defaultdict's factory, a mapping proxy's mapping) ran NumPy inside an own launch: judged ok before."""
    result = run_candidate(name, "vector_add", directory=ADVERSARIAL, env=warm_env)
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "runs host code: its launch passes an object of" in result.feedback


def test_only_plain_layouts_are_data():
    import collections
    import types

    import triton.language as tl

    plain = [1, 2.0, "relu", None, (1, 2), [1], {"a": 1}, torch.ones(1), torch.float16, tl.float16, tl, torch.Size([2])]
    assert all(guards._passable(v) for v in plain)
    wrappers = [collections.defaultdict(int), types.MappingProxyType({}), map(int, []), collections.OrderedDict()]
    assert not any(guards._passable(v) for v in wrappers)


class _Kernel:
    """Stands for a JIT function: ``_grid_resolved`` only reads its ``fn`` (``isinstance`` patched)."""

    def __init__(self, fn):
        self.fn = fn


def _kernel_fn(x_ptr, n, ACT, BLOCK=64, *, STAGES=2):
    pass


def test_a_callable_grid_is_resolved_with_the_launch_arguments_by_name(monkeypatch):
    monkeypatch.setattr(guards, "_jit_classes", lambda: (_Kernel,))
    kernel, seen = _Kernel(_kernel_fn), []

    def grid(meta):
        seen.append(dict(meta))
        return [-(-meta["n"] // meta["BLOCK"]), True]

    launch = {"ACT": "relu", "grid": grid, "warmup": False, "num_warps": 4}
    resolved = guards._grid_resolved(kernel, ("x", 130), launch)
    assert resolved["grid"] == (3, 1) and type(resolved["grid"][1]) is int
    assert seen == [{"x_ptr": "x", "n": 130, "ACT": "relu", "BLOCK": 64, "STAGES": 2, "num_warps": 4}]
    assert list(seen[0])[:5] == ["x_ptr", "n", "ACT", "BLOCK", "STAGES"]  # the parameters' order first
    partial = functools.partial(lambda n, meta: (n // meta["BLOCK"],), 256)
    assert guards._grid_resolved(kernel, ("x", 1), {"ACT": 0, "BLOCK": 32, "grid": partial})["grid"] == (8,)
    held = {"grid": grid, "warmup": True}  # compile only: Triton never calls the grid
    assert guards._grid_resolved(kernel, (), held) is held
    with pytest.raises(TypeError):  # an item that is not an integer fails before the launch, as in Triton
        guards._grid_resolved(kernel, (), {"grid": (1.5,)})


class _Mode(enum.IntEnum):
    SUM = 0
    MEAN = 1


class _Activation(enum.Enum):
    RELU = "relu"
    GELU = "gelu"


class _Hooked(enum.IntEnum):
    A = 0

    def __eq__(self, other):  # Python of the candidate's, run by a kernel's comparison
        return int(self) == other

    __hash__ = int.__hash__


class _Mixin:
    def double(self):
        return 2


class _Mixed(_Mixin, enum.IntEnum):
    A = 0


def test_a_plain_enum_member_is_data():
    assert guards._passable(_Mode.MEAN) and guards._passable(_Activation.GELU)


def test_an_enum_holding_python_of_its_own_is_not():
    assert not guards._passable(_Hooked.A)
    assert not guards._passable(_Mixed.A)


def test_an_enum_member_holding_an_object_is_not():
    class Held(enum.IntEnum):
        A = 0

    class Payload:
        def __getitem__(self, index):
            return index

    Held.A._value_ = Payload()  # ``MODE.value[0]`` in a kernel would run its ``__getitem__``
    assert not guards._passable(Held.A)


def test_an_enum_whose_machinery_was_replaced_is_not():
    class Replaced(enum.IntEnum):
        A = 0

    type.__setattr__(Replaced, "_generate_next_value_", lambda *args: 0)
    assert not guards._passable(Replaced.A)


def _enum_own(name: str):
    return guards._unwrapped(vars(enum.Enum)[name])


def test_an_enum_laid_out_as_python_312_and_313_lay_it_out_is_data():
    # From Python 3.12 every enum class's namespace holds ``_generate_next_value_`` as enum's static
    # method itself, and from 3.13 ``__static_attributes__`` (a tuple of names): on the GPU's Python 3.12
    # a plain IntEnum flag was host code while the CPU's 3.11 passed it (future_annotations.py)
    class Laid(enum.IntEnum):
        A = 0

    type.__setattr__(Laid, "_generate_next_value_", staticmethod(_enum_own("_generate_next_value_")))
    type.__setattr__(Laid, "__static_attributes__", ("x", "y"))
    assert guards._passable(Laid.A)


def test_an_enum_whose_static_method_or_names_hold_python_of_its_own_is_not():
    class Own(enum.IntEnum):
        A = 0

    type.__setattr__(Own, "_generate_next_value_", staticmethod(lambda *args: 0))
    assert not guards._passable(Own.A)

    class Sub(staticmethod):  # its ``__get__`` would be Python of the candidate's
        pass

    class Wrapped(enum.IntEnum):
        A = 0

    type.__setattr__(Wrapped, "_generate_next_value_", Sub(_enum_own("_generate_next_value_")))
    assert not guards._passable(Wrapped.A)

    class Held(enum.IntEnum):
        A = 0

    type.__setattr__(Held, "__static_attributes__", ("x", print))
    assert not guards._passable(Held.A)


AUTOTUNED = """
import torch, triton, triton.language as tl
from tritongym.evaluate import triton_compat

assert triton_compat.interpreter_autotuning()
runs = []

@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32, 64)], key=["n"])
@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

def timed(kernel_call, quantiles):
    runs.append(1)
    kernel_call()
    return [float(len(runs) == 1)] * len(quantiles)  # the first config is the slowest

@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32)], key=["n"], do_bench=timed)
@triton.jit
def triple(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, 3 * tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

x, out = torch.randn(100), torch.empty(100)
double[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
assert torch.equal(out, 2 * x) and double.best_config.kwargs == {"BLOCK": 16}
triple[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
assert torch.equal(out, 3 * x) and len(runs) == 2 and triple.best_config.kwargs == {"BLOCK": 32}
chosen = []
for _ in range(3):  # later calls: each config in turn, without a benchmark (red team 11 #3)
    double[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
    chosen.append(double.best_config.kwargs["BLOCK"])
    assert torch.equal(out, 2 * x)
assert chosen == [32, 64, 16], chosen
triple[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)  # its own benchmark: its choice kept
assert len(runs) == 2 and triple.best_config.kwargs == {"BLOCK": 32}
print("ok")
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU's driver benchmarks the configs itself")
def test_several_autotuning_configs_run_under_the_interpreter_without_a_gpu():
    """Triton's autotuner asks the GPU's driver for its benchmark once several configs remain (on the
    CPU: "0 active drivers"); the zygote gives it one that runs each config once and picks the first
    (each later call the next, in turn),
    and an autotuner's own ``do_bench`` is still used."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).parent.parent)}
    done = subprocess.run([sys.executable, "-c", AUTOTUNED], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


KEEPER = """
import torch
import triton
import triton
import triton.language as tl

TABLE = torch.arange(8.0)


@triton.jit
def lookup_kernel(x_ptr, lut_ptr, cache_ptr, table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets) + tl.load(lut_ptr + offsets) + tl.load(cache_ptr + offsets)
    tl.store(out_ptr + offsets, x + tl.load(table_ptr + offsets))


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("lut", torch.full((8,), 2.0), persistent=False)
        self.cache = [torch.full((8,), 3.0)]
        self.seen = None

    def forward(self, x):
        out = torch.empty_like(x)
        lookup_kernel[(1,)](x, self.lut, self.cache[0], TABLE, out, 8, BLOCK=8)
        self.seen = (self.lut.clone(), self.cache[0].clone(), TABLE.clone())
        return out
"""


HELD_OUTPUTS = """
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def write_kernel(x_ptr, pair, out_desc, BLOCK: tl.constexpr):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        a, b, c = torch.zeros(16, 16), torch.zeros(16, 16), torch.zeros(16, 16)
        write_kernel[(1,)](x, (a, [b]), TensorDescriptor.from_tensor(c, [16, 16]), BLOCK=16)
        return a, b, c
"""


def _hollow(tmp_path, monkeypatch, source: str, args: list) -> tuple:
    """The runner's hollow forward of ``source`` on the CPU: (what it sent, the runner)."""
    import socket

    from tritongym.evaluate.judge import protocol as p
    from tritongym.evaluate.judge.runner import Runner

    path = tmp_path / "hollowed.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "candidate", module)
    spec.loader.exec_module(module)
    ours, theirs = socket.socketpair()
    runner, sent = Runner(ours, torch.device("cpu"), [0.0]), []
    runner.model, runner.path, runner.send = module.ModelNew(), str(path), sent.append
    try:
        runner.hollow(p.Hollow(args=args))
    finally:
        ours.close()
        theirs.close()
    return sent, runner


@pytest.mark.skipif(
    importlib.util.find_spec("triton.tools.tensor_descriptor") is None, reason="no TensorDescriptor in this Triton"
)
def test_the_hollow_forward_poisons_every_tensor_a_launch_would_reach(tmp_path, monkeypatch):
    # an output held in a tuple or list argument (Triton flattens them) and one a tensor descriptor
    # stores through: on a GPU the caching allocator gives the last call's block back, holding the last
    # answer, so an output left unpoisoned made tensor_descriptor.py hack_no_triton ("for show")
    sent, _ = _hollow(tmp_path, monkeypatch, HELD_OUTPUTS, [torch.ones(8)])
    assert all(torch.isnan(t).all() for t in sent[0].value)


def test_the_hollow_forward_gives_back_what_the_solution_keeps(tmp_path, monkeypatch):
    """A non-persistent buffer (a lookup table), a tensor held as a plain attribute (a cache) and one
    held as a global, read by a kernel: the hollow forward poisons them while its launches are skipped,
    as any buffer a launch would write, and puts them back once its answer is sent, so that the calls
    after it (timing, on a GPU) do not read NaN and fail as a mismatch."""
    x = torch.ones(8)
    sent, runner = _hollow(tmp_path, monkeypatch, KEEPER, [x])
    module = sys.modules["candidate"]
    assert torch.isnan(sent[0].value).all()  # the output's launch was skipped
    assert all(torch.isnan(t).all() for t in runner.model.seen)  # poisoned during the hollow forward
    assert torch.equal(runner.model.lut, torch.full((8,), 2.0))
    assert torch.equal(runner.model.cache[0], torch.full((8,), 3.0))
    assert torch.equal(module.TABLE, torch.arange(8.0)) and torch.equal(x, torch.ones(8))


def test_only_a_determinism_switch_turned_on_is_no_tampering(monkeypatch):
    """``torch.use_deterministic_algorithms(True)`` (deterministic_algorithms.py) changes no precision;
    its ``warn_only`` and the switch turned off from on are still changed settings."""
    from tritongym.evaluate import taint

    before = taint._torch_settings()
    assert not taint._determinism("deterministic", False) and not taint._determinism("num_threads", True)
    monkeypatch.setattr(taint, "_torch_settings", lambda: dict(before))
    state = taint.ProcessState.__new__(taint.ProcessState)
    state.settings, state.attributes, state.class_keys = dict(before), taint._attribute_ids(), taint._class_keys()
    for turned, changed in (
        ({"deterministic": True, "torch._C._get_deterministic_algorithms": True}, []),
        ({"deterministic": True, "torch._C._get_deterministic_algorithms_warn_only": True}, ["warn_only"]),
        ({"grad_enabled": False}, ["grad_enabled"]),
    ):
        monkeypatch.setattr(taint, "_torch_settings", lambda turned=turned: before | turned)
        reasons = [r for r in state.tampering() if r.startswith("changed torch settings")]  # not the patch itself
        assert all(word in " ".join(reasons) for word in changed) and bool(reasons) == bool(changed), reasons
    state.settings = before | {"deterministic": True}  # on in the baseline, turned off
    monkeypatch.setattr(taint, "_torch_settings", lambda: before | {"deterministic": False})
    assert "changed torch settings: deterministic" in " ".join(state.tampering())


def test_the_attention_order_torch_fixes_at_its_first_use_is_in_the_baseline_and_a_later_change_is_not(monkeypatch):
    """PyTorch's CUDA attention sets its backends' priority order at a process's first attention
    (cuDNN first on an H200): the runner asks for a backend before its baseline, so an honest
    candidate's first attention (32_ConvolutionalVisionTransformer's transformer layers) changes
    nothing, while a candidate's own change of the order after it is still a changed setting. The
    first use is played here by a choice that sets the order the first time it is asked, as torch's
    CUDA choice does."""
    import torch

    from tritongym.evaluate import taint

    original = torch._C._get_sdp_priority_order()
    chosen = list(reversed(original))
    asked = []

    def first_use_sets_the_order(query, key, value, *args, **kwargs):
        if not asked:
            torch._C._set_sdp_priority_order(chosen)
        asked.append(query.device.type)
        return 0

    monkeypatch.setattr(torch, "_fused_sdp_choice", first_use_sets_the_order)
    try:
        state = taint.ProcessState(torch.device("cpu"))
        assert asked == ["cpu"] and torch._C._get_sdp_priority_order() == chosen
        torch._fused_sdp_choice(*[torch.zeros(1, 1, 2, 8)] * 3)  # the candidate's first attention
        assert not [r for r in state.tampering() if "sdp" in r]
        torch._C._set_sdp_priority_order(original)  # the candidate's own change
        assert "torch._C._get_sdp_priority_order" in " ".join(state.tampering())
        asked.clear()
        unsettled = taint.ProcessState()  # no device: nothing fixed first (the check of a test's own state)
        assert asked == []
        torch._fused_sdp_choice(*[torch.zeros(1, 1, 2, 8)] * 3)
        assert "torch._C._get_sdp_priority_order" in " ".join(unsettled.tampering())
    finally:
        torch._C._set_sdp_priority_order(original)
