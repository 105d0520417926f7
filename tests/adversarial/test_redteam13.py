"""The thirteenth red team's breaks (tests/adversarial/redteam13/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.compare import Tolerance, compare_outputs
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.judge import answer_made_before_kernels
from tritongym.evaluate.judge.runner import MadeBeforeKernels, answer_sample
from tritongym.evaluate.judge.speed import check_batch

HERE = Path(__file__).parent / "redteam13"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize(
    ("route", "replaced"),
    [
        ("semantic", "TritonSemantic.add"),
        ("executor", "GridExecutor._restore_args_dev"),
        ("builder_object", "interpreter_builder.create_fadd"),
        ("libdevice", "SYMBOLS.__nv_copysignf"),
    ],
)
def test_triton_python_an_interpreted_grid_runs_through_is_watched(judge, route, replaced):
    """#1: a method of Triton's semantic layer or of the interpreter's grid executor replaced at import,
    an attribute set on the interpreter's builder object, or an entry of the libdevice table written
    behind its read-only view computed the softmax with NumPy inside the solution's own launch: ``ok``
    on the CPU."""
    source = (HERE / "semantic_method_does_the_work.py").read_text().replace('ROUTE = "semantic"', f'ROUTE = "{route}"')
    result = judge(small_problem("04_softmax"), source, config())
    assert result.verdict is Verdict.HACK_TAMPERING, result.feedback
    assert replaced in result.feedback


def _linear(x: torch.Tensor, w: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.relu((x.to(dtype) @ w.to(dtype).T).float())


@pytest.mark.parametrize(
    ("timed", "verdict"),
    [(torch.bfloat16, Verdict.PRECISION), (torch.float16, Verdict.PRECISION), (torch.float32, None)],
    ids=["bf16", "fp16", "float32"],
)
def test_a_timed_call_is_held_to_the_trials_precision(timed, verdict):
    """#2: the timed batches' outputs were checked at the loose tolerance only (1e-2), so a solution
    exact in its trials and in bf16 (or TF32, fp16) once timed passed, timed at the narrow type's speed.
    The trial's comparison gives each output a bound (compare.timed_bound) that the timed calls are
    held to; float32 computed in another order (the honest counterpart) stays within it."""
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(96, 256, generator=gen) / 16
    trial_x = torch.randn(64, 256, generator=gen)
    reference, reference64 = _linear(trial_x, w, torch.float32), _linear(trial_x.double(), w.double(), torch.float64)
    trial = compare_outputs(_linear(trial_x, w, torch.float32), reference, reference64, Tolerance())
    assert trial.ok and trial.bounds and trial.bounds[0] < 1e-4, trial
    calls = [torch.randn(64, 256, generator=gen) for _ in range(5)]
    expected = [[_linear(x, w, torch.float32)] for x in calls]
    if timed is torch.float32:  # the same float32 product summed in another order: an honest kernel's
        got = [torch.stack([torch.relu(sum((x[:, k::4] @ w[:, k::4].T) for k in range(4))) for x in calls])]
    else:
        got = [torch.stack([_linear(x, w, timed) for x in calls])]
    check_batch(expected, got, 1)  # the loose check alone passes every one of them
    if verdict is None:
        check_batch(expected, got, 1, trial.bounds)
        return
    with pytest.raises(Failure) as raised:
        check_batch(expected, got, 1, trial.bounds)
    assert raised.value.verdict is verdict and "lower precision" in raised.value.feedback


@pytest.mark.parametrize(
    "setting", ["fp16_accumulation", "math_sdp_reduction", "flush_denormal", "cudnn_off", "autocast"]
)
def test_a_library_switch_the_list_never_named_is_tampering(judge, setting):
    """#3: torch's switches beside the hand-made list of taint.py (cuBLAS's fp16 accumulation, the math
    attention's fp16/bf16 reduction, flushed subnormals, cuDNN off) were never read: ``ok``. Every
    setting getter of torch's C module is read now."""
    source = (HERE / "narrows_a_library_setting.py").read_text()
    source = source.replace('SETTING = "fp16_accumulation"', f'SETTING = "{setting}"')
    result = judge(small_problem("vector_add"), source, config())
    assert result.verdict is Verdict.HACK_TAMPERING, result.feedback
    assert "changed torch settings" in result.feedback


@pytest.mark.parametrize(
    ("route", "verdict"),
    [
        ("forward", Verdict.RUNTIME_ERROR),
        ("like", Verdict.RUNTIME_ERROR),
        ("constructor", Verdict.RUNTIME_ERROR),
        ("type", Verdict.OK),
        ("to_type", Verdict.OK),
        ("device", Verdict.OK),
        ("buffer", Verdict.OK),
    ],
)
def test_a_tensor_made_on_a_device_named_cpu_is_host_memory(judge, route, verdict):
    """#4: ``device="cpu"`` written out is the host on a GPU too (Triton refuses the launch); it was
    taken as placed. What forward reads from its inputs (``a.device``, ``a.device.type``) names the
    GPU there, and a buffer is moved by ``model.to``: those stay ``ok``."""
    source = (HERE / "device_named_cpu.py").read_text().replace('ROUTE = "forward"', f'ROUTE = "{route}"')
    result = judge(small_problem("vector_add"), source, config())
    assert result.verdict is verdict, result.feedback
    if verdict is Verdict.RUNTIME_ERROR:
        assert 'with device="cpu"' in result.feedback


def test_numpys_own_python_below_what_the_interpreter_calls_is_watched(judge):
    """#5: ``numpy.lib._stride_tricks_impl._broadcast_to`` (what ``np.broadcast_to`` calls for
    ``tl.broadcast_to``) replaced at import computed the softmax inside the solution's own launch:
    ``ok``, with every attribute of ``numpy`` itself watched."""
    result = judge(small_problem("04_softmax"), (HERE / "numpy_internals_do_the_work.py").read_text(), config())
    assert result.verdict is Verdict.HACK_TAMPERING, result.feedback
    assert "numpy.lib._stride_tricks_impl._broadcast_to" in result.feedback


@pytest.mark.parametrize("route", ["tolist", "numpy", "dummy_first", "in_a_tuple", "kept_buffer"])
def test_an_answer_the_host_computed_and_a_kernel_copied_is_not_triton_work(judge, route):
    """#6: row sums from Python (``tolist``) or NumPy, copied into the output by a Triton kernel, passed
    every guard (a launch in every trial; the hollow forward returned poison): ``ok`` under ``forbid``.
    In the hollow forward no kernel runs, so a tensor forward passed to a launch that holds the answer
    was computed without Triton. (Under ``forbid`` red team 14 #2's count of forward's copies to the
    host refuses it first; ``penalize`` reaches the hollow forward.)"""
    source = (HERE / "host_sum_copied_by_a_kernel.py").read_text().replace('ROUTE = "tolist"', f'ROUTE = "{route}"')
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "bytes of device memory to the host" in result.feedback
    result = judge(small_problem("03_row_sum"), source, config(torch_compute="penalize"))
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_an_answer_made_by_glue_and_copied_by_a_kernel_is_not_triton_work(judge):
    """#6b: 11_roll's answer made by slices and ``torch.cat`` (glue to the op recorder), then copied."""
    source = (HERE / "roll_by_glue_copied_by_a_kernel.py").read_text()
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_an_answer_pytorch_computed_and_a_kernel_copied_stays_a_finding_under_penalize(judge):
    """#6c: under ``penalize`` PyTorch's answer copied by a kernel stays ``ok`` with its finding."""
    source = (HERE / "torch_answer_copied_by_a_kernel.py").read_text()
    result = judge(small_problem("04_softmax"), source, config(torch_compute="penalize"))
    assert result.verdict is Verdict.OK, result.feedback
    found = [f.message for f in result.findings if f.check == "torch_compute"]
    assert found and "already holding the output" in found[0], result.findings


def test_what_the_hollow_forward_sends_of_the_tensors_its_launches_were_handed():
    """#6: of an output's size and dtype only, none of one value, a kept tensor only where forward changed
    it, each as the elements ``answer_sample`` picks; every one kept, and the ``PER_OUTPUT`` per output
    nearest the reference's output sent (``handed.nearest``: red team 19 #5's decoys handed after the
    answer took the place of the latest four)."""
    from tritongym.evaluate.compare import element_bounds
    from tritongym.evaluate.judge.handed import nearest

    made = MadeBeforeKernels([[6, "torch.float32"]])
    kept, changed = torch.arange(6.0), torch.arange(6.0)
    made.before([kept, changed])
    changed += 1  # forward wrote it before the launch
    decoys = [torch.rand(6) for _ in range(5)]
    for t in (kept, changed, torch.zeros(6), torch.arange(6) * 7, torch.arange(7.0), *decoys):
        made.see(t)
    assert len(made.copies) == 7 and all(output == 0 for output, _, _ in made.copies)  # the int64 one cast
    assert not any(torch.equal(c, kept) for _, c, _ in made.copies)
    answer = torch.arange(6.0) + 1
    sent = nearest(made.copies, [element_bounds(answer, answer.double(), Tolerance())], made.PER_OUTPUT)
    assert len(sent) == MadeBeforeKernels.PER_OUTPUT and torch.equal(sent[0], changed)  # the first, not the latest
    big = MadeBeforeKernels([[10_000, "torch.float32"]])
    big.see(torch.arange(10_000.0))
    assert big.copies[0][1].numel() == answer_sample(10_000).numel() == 4096
    assert big.copies[0][1][-1] == 9999.0


def test_an_answer_an_input_or_a_constant_already_is_not_looked_for():
    """#6d: an output that one of the inputs holds within tolerance (an eval-mode batch norm of fresh
    statistics) or that is one value everywhere: an honest kernel's copied input or zeroed buffer."""
    x = torch.randn(64)
    trial = SimpleNamespace(inputs=[x], expected=2 * x, expected64=2 * x.double())
    assert (
        answer_made_before_kernels([(2 * x)[answer_sample(64)]], trial, Tolerance()) == "a tensor of the output's size"
    )
    assert answer_made_before_kernels([(3 * x)[answer_sample(64)]], trial, Tolerance()) == ""
    near = SimpleNamespace(inputs=[x], expected=x * (1 - 1e-7), expected64=x.double() * (1 - 1e-7))
    assert answer_made_before_kernels([x.clone()], near, Tolerance()) == ""
    zeros = SimpleNamespace(inputs=[x], expected=torch.zeros(64), expected64=torch.zeros(64, dtype=torch.float64))
    assert answer_made_before_kernels([torch.zeros(64)], zeros, Tolerance()) == ""
