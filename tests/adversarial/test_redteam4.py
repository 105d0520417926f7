"""The fourth red team's breaks (tests/adversarial/redteam4/README.md). Each test asserts the safe
behaviour; those of breaks still open are marked xfail(strict=True) and flip when fixed."""

from __future__ import annotations

import math
import socket
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch.utils._python_dispatch import _disable_current_modes

from helpers import DEVICE, PROCESSES_REFUSED, small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.compare import Tolerance, compare_outputs
from tritongym.evaluate.guards import (
    OpRecorder,
    OpWitness,
    _innermost_compute,
    count_profiler_switches,
    unrecorded_compute,
)
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import MAX_FEEDBACK_CHARS, bounded
from tritongym.evaluate.static_checks import forbidden_constructs
from tritongym.problems.problem import Problem
from tritongym.rewards import TieredReward, VerifiableReward

HERE = Path(__file__).parent / "redteam4"


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 1.0} | overrides))


def judged(env, name: str, problem: str = "softmax", **overrides):
    return env.submit(small_problem(problem), (HERE / name).read_text(), config(**overrides)).result()


def test_compute_run_with_the_python_dispatch_key_off_is_still_compute(warm_env):
    """#1: `torch._C._DisableTorchDispatch()` skips the op recorder (a TorchDispatchMode); the
    profiler's record of forward's ops (guards.OpWitness) still sees `_softmax`."""
    result = judged(warm_env, "disables_op_recorder.py", torch_compute="forbid")
    assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback
    assert "_softmax" in result.feedback


PYTHON_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
QUIETERS = {
    "disable_torch_dispatch": lambda: torch._C._DisableTorchDispatch(),
    "exclude_python_key": lambda: torch._C._ExcludeDispatchKeyGuard(PYTHON_KEY),
    "disable_current_modes": lambda: _disable_current_modes(),
}


@pytest.mark.parametrize("quiet", list(QUIETERS), ids=list(QUIETERS))
def test_every_way_to_switch_the_python_key_off_is_witnessed(quiet):
    """#1's spellings, in this process: the recorder sees nothing, the witness sees `tanh`; glue and
    composites that return at once (`.numpy()`'s `resolve_conj`) are not compute."""
    x = torch.randn(8, 8)
    recorder, witness = OpRecorder(), OpWitness()
    with witness, recorder:
        with QUIETERS[quiet]():
            torch.tanh(x)
        x.numpy()
        x.clone().view(64)
    assert not recorder.compute and not witness.stopped
    assert dict(unrecorded_compute(recorder, witness)) == {"tanh (hidden from the op recorder)": 1}


def _event(name, *children):
    return SimpleNamespace(name=name, children=list(children))


def test_an_op_whose_kernel_allocates_through_the_dispatcher_is_still_compute():
    """On a GPU the witness saw `_softmax` run `empty_like` (its CUDA kernel's host code allocates the
    output through the dispatcher), so `_softmax` had a child and was not innermost: PyTorch hidden
    from the recorder got `ok` under forbid. What counts is an op that computes and ran no other op
    that does; a composite over compute ops counts once, at its compute."""
    mark = "tritongym-witness-test"
    allocation = _event("aten::empty_like", _event("aten::empty_strided"))
    softmax = _event("aten::softmax", _event("aten::_softmax", allocation))
    tree = _event(mark, softmax, _event("aten::empty_like"), _event("aten::tanh"))
    compute, marks = Counter(), set()
    _innermost_compute(tree, compute, marks, mark)
    assert compute == Counter({"_softmax": 1, "tanh": 1}) and marks == {mark}


CPU = {torch.autograd.ProfilerActivity.CPU}
PAUSES = {
    "toggle_collection": (lambda: torch.autograd._toggle_collection_dynamic(False, CPU),
                          lambda: torch.autograd._toggle_collection_dynamic(True, CPU)),
    "record_function_off": (lambda: torch._C._autograd._enable_record_function(False),
                            lambda: torch._C._autograd._enable_record_function(True)),
}  # fmt: skip


@pytest.mark.parametrize("pause", list(PAUSES), ids=list(PAUSES))
def test_pausing_the_witness_inside_forward_is_seen(pause):
    """#1c: the profiler's collection paused around hidden work and resumed before forward returns:
    the witness's switch counter shows it (callbacks cleared for good: its end mark is missing)."""
    count_profiler_switches()
    off, on = PAUSES[pause]
    recorder, witness = OpRecorder(), OpWitness()
    with witness, recorder:
        off()
        with torch._C._DisableTorchDispatch():
            torch.tanh(torch.randn(4))
        on()
    assert witness.stopped


@pytest.mark.parametrize("name", ["stops_the_op_witness.py", "restarts_the_op_witness.py", "pauses_the_op_witness.py"])
def test_stopping_the_profiler_that_witnesses_forward_is_tampering(warm_env, name):
    """#1's variants against its fix: the witness's profiler stopped, stopped and replaced by a
    session of the candidate's own (which lacks the witness's mark), or paused and resumed."""
    result = judged(warm_env, name, torch_compute="forbid")
    assert result.verdict is Verdict.HACK_TAMPERING, result.feedback
    assert "stopped the profiler" in result.feedback


def test_a_forward_that_ends_its_process_in_the_guard_checks_keeps_its_hack_verdict(warm_env):
    """#2: PyTorch compute recorded in the trials is `hack_torch_compute` under "forbid"; a forward
    that exits when the fallback or hollow check runs it must not turn that into a `crash`."""
    result = judged(warm_env, "exits_during_guard_checks.py", torch_compute="forbid")
    assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback


def test_candidate_code_run_after_forward_returns_is_watched_like_forward(warm_env):
    """#9: the runner asked the model for its parameters (aliasing check) after the op recorder and
    its witness had stopped and before it sent the output; an override of `named_parameters`
    computed the output there."""
    result = judged(warm_env, "computes_after_forward_returns.py", torch_compute="forbid")
    assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_runner_cannot_report_a_number_that_is_not_finite(number):
    """#3: a coverage of NaN compares false with every bound (speed.py clamps it to [0, 1] with
    min/max, which keep NaN) and skips the decoy cross-check (`coverage == 0.0`)."""
    fields = f'{{"coverage": {number}, "kernels": [], "foreign_streams": []}}'
    header = f'{{"kind": "profile_result", "fields": {fields}}}'.encode()
    a, b = socket.socketpair()
    with a, b:
        a.sendall(p._PREFIX.pack(p.MAGIC, len(header), 0) + header)
        with pytest.raises(p.ProtocolError, match="wrong type"):
            p.receive(b, (p.ProfileResult,), time.monotonic() + 5, 1 << 20)


@pytest.mark.parametrize(
    "fields",
    [
        {"coverage": math.nan},
        {"coverage": 40.0},
        {"coverage": -3.0},
        {"speedup": math.nan},
        {"speedup": math.inf, "coverage": math.inf},
        {"speedup": "3.0"},
    ],
)
def test_no_result_number_moves_a_reward_out_of_its_range(fields):
    """#3: whatever a result's speedup and coverage hold, the reward stays finite and within what an
    honest result can earn."""
    result = {"verdict": "ok", "findings": []} | fields
    verifiable = VerifiableReward()
    reward = verifiable(result)
    top = verifiable.w_correct + verifiable.w_speedup * verifiable.speedup_cap + verifiable.w_coverage
    assert math.isfinite(reward) and verifiable.w_correct <= reward <= top, reward
    tiered = TieredReward()(result)
    assert math.isfinite(tiered) and tiered <= max(r for _, r in TieredReward().tiers)
    if isinstance(fields.get("speedup"), float) and math.isnan(fields["speedup"]):
        assert tiered == TieredReward().untimed  # not measured, not "slower"


def test_feedback_stays_bounded_whatever_the_output_holds(warm_env):
    """#4: a dict output with 60,000 long keys made a `wrong_shape` feedback of 12 MB (every key was
    listed); the structure message names a few keys, and every feedback and detail is bounded."""
    problem = Problem("dict_output", (HERE / "dict_output_problem.py").read_text())
    source = (HERE / "floods_feedback_with_keys.py").read_text()
    result = warm_env.submit(problem, source, config()).result()
    assert result.verdict is Verdict.WRONG_SHAPE, result.feedback[:500]
    assert len(result.feedback) <= MAX_FEEDBACK_CHARS + 100 and "more" in result.feedback, len(result.feedback)


def test_bounded_text_says_what_it_left_out():
    assert bounded("x" * 10, 20) == "x" * 10
    assert bounded("x" * 30, 20) == "x" * 20 + " ... (10 more characters)"


@pytest.mark.parametrize("other", [None, "mean"])
def test_an_output_with_a_value_that_is_not_a_number_can_be_judged(other):
    """#6 (found on the way): a reference output holding None or a string beside its tensors made every
    candidate's comparison raise ("Could not infer dtype of NoneType"), so even a correct one got
    `crash`; such leaves are compared by equality."""
    expected = (torch.ones(3), other)
    expected64 = (torch.ones(3, dtype=torch.float64), other)
    assert compare_outputs((torch.ones(3), other), expected, expected64, Tolerance()).ok
    wrong = compare_outputs((torch.ones(3), "sum"), expected, expected64, Tolerance())
    assert wrong.verdict in (Verdict.MISMATCH, Verdict.WRONG_SHAPE), wrong


COMPILE_ERROR_TEXT = (
    (HERE / "launders_compile_error.py")
    .read_text()
    .replace(
        """        failed = False
        try:
            add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        except Exception:
            failed = True
        if failed:
            raise ValueError("the sizes do not fit")
""",
        """        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
""",
    )
)


def test_a_compile_error_re_raised_as_a_plain_exception_earns_nothing_more(warm_env):
    """#5: which category a failure after import lands in is the candidate's choice: it catches its
    kernel's compile error and raises a plain exception (`runtime_error`). TieredReward paid the
    `incorrect` category -0.3 and `failed` -1.0; it now pays both `not_correct`."""
    honest = warm_env.submit(small_problem("vector_add"), COMPILE_ERROR_TEXT, config()).result()
    laundered = judged(warm_env, "launders_compile_error.py", problem="vector_add")
    assert honest.verdict is Verdict.COMPILE_ERROR, honest.feedback
    assert laundered.verdict is Verdict.RUNTIME_ERROR, laundered.feedback
    assert TieredReward()(laundered) <= TieredReward()(honest)


@pytest.mark.skipif(not PROCESSES_REFUSED, reason="the runner's seccomp filter is written for x86-64 Linux")
def test_compute_in_a_child_process_that_forward_reaps_is_refused(warm_env):
    """#7: the op recorder, its witness and the thread counter watch the runner's own process; the
    judge sees only children still running when forward returns, so a child that computed and was
    reaped before forward returned left nothing to see (the candidate got `ok` under `forbid`).
    A runner's seccomp filter now refuses process creation: the fork fails with EPERM in forward, a
    runtime error of the candidate's, paid no more than an honest failure. On a GPU too (run with
    TRITONGYM_TEST_DEVICE=cuda, and in test_redteam4_gpu.py): there the runner's compiler helper
    runs Triton's ptxas."""
    result = judged(warm_env, "computes_in_a_child_process.py", torch_compute="forbid")
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "Operation not permitted" in result.feedback and "_split()" in result.feedback, result.feedback
    honest = warm_env.submit(small_problem("vector_add"), COMPILE_ERROR_TEXT, config()).result()
    assert honest.verdict is Verdict.COMPILE_ERROR, honest.feedback
    for reward in (TieredReward(), VerifiableReward()):
        assert reward(result) <= reward(honest), reward


def test_a_triton_kernel_not_of_the_solutions_file_is_not_its_work(warm_env):
    """#8 on the CPU: forward launches a Triton kernel compiled from a file it wrote (as Inductor's
    kernels are, under `torch.compile` inside forward on a GPU); no aten op computes and that kernel
    is not the candidate's, so nothing was counted (`ok` under `forbid`). Launches of a kernel not
    of the solution's file are now forward's PyTorch compute (the rule of identity that coverage
    uses): `hack_torch_compute` under forbid, a finding under penalize."""
    forbidden = judged(warm_env, "launches_a_kernel_of_another_file.py", torch_compute="forbid", static_checks=False)
    assert forbidden.verdict is Verdict.HACK_TORCH_COMPUTE, forbidden.feedback
    assert "softmax_rows (Triton kernel not of the solution)" in forbidden.feedback, forbidden.feedback
    penalized = judged(warm_env, "launches_a_kernel_of_another_file.py", static_checks=False)
    assert penalized.verdict is Verdict.OK, penalized.feedback
    findings = [f.message for f in penalized.findings if f.check == "torch_compute"]
    assert findings and "softmax_rows (Triton kernel not of the solution)" in findings[0], penalized.findings


PATCHES_THE_RUNNER = """
import tritongym.evaluate.judge.runner as runner
import torch
vars(runner)["OpRecorder"] = object
torch.nn.functional.__dict__["softmax"] = None
"""


def test_the_judges_package_and_module_namespaces_are_refused_as_written():
    """#10: the runner's guards were reachable without any obfuscation: `import tritongym...` and a
    write into `vars(module)` (which the assignment check did not see) replace its op recorder. The
    candidate's own namespaces (`self.__dict__`, `vars(self)`) stay allowed."""
    found = forbidden_constructs(PATCHES_THE_RUNNER)
    assert [line for line, _ in found] == [2, 4, 5], found
    own = "class M:\n    def f(self):\n        self.__dict__['x'] = 1\n        return vars(self), vars()\n"
    assert forbidden_constructs(own) == []
