"""The thirteenth red team's breaks on a GPU (marker ``gpu``; run through the device tool). Written, not
run, in the red team's session (no GPU): what each asserts is what Triton and PyTorch do by reading."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam13"
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("fast", ["bf16", "tf32"])
def test_a_solution_that_lowers_its_precision_once_timed_is_not_paid_for_it(fast):
    """#2: exact in the trials, bf16 (or TF32) in the timed batches: within the loose check, and now
    held to the trials' bound (``precision``) instead of timed at the narrow type's speed."""
    source = (HERE / "lower_precision_when_timed.py").read_text().replace('FAST = "bf16"', f'FAST = "{fast}"')
    result = evaluate(find_problem("06_linear_relu"), source, EvalConfig(device="cuda", trials=2, profile=False))
    assert result.verdict is Verdict.PRECISION, result.feedback
    assert "During timing" in result.feedback and result.speedup is None


def test_a_solution_exact_in_every_call_is_timed():
    """#2's control: the same kernel exact in every call (the switch never reached) is ``ok`` and timed."""
    source = (HERE / "lower_precision_when_timed.py").read_text().replace("PRECISE_CALLS = 8", "PRECISE_CALLS = 10**9")
    result = evaluate(find_problem("06_linear_relu"), source, EvalConfig(device="cuda", trials=2, profile=False))
    assert result.verdict is Verdict.OK, result.feedback
    assert result.speedup is not None


ROUTES = [("forward", Verdict.RUNTIME_ERROR), ("constructor", Verdict.RUNTIME_ERROR), ("type", Verdict.OK),
          ("to_type", Verdict.OK), ("buffer", Verdict.OK)]  # fmt: skip


@pytest.mark.parametrize(("route", "verdict"), ROUTES)
def test_a_tensor_made_on_a_device_named_cpu_is_host_memory_on_a_gpu(route, verdict):
    """#4: ``device="cpu"`` written out is host memory (Triton refuses the launch); ``a.device.type``
    names the GPU, and ``model.to`` moves a buffer: the CPU's verdicts now."""
    source = (HERE / "device_named_cpu.py").read_text().replace('ROUTE = "forward"', f'ROUTE = "{route}"')
    config = EvalConfig(device="cuda", trials=2, timing=False, profile=False, torch_compute="forbid")
    result = evaluate(find_problem("vector_add").small(), source, config)
    assert result.verdict is verdict, result.feedback


@pytest.mark.parametrize("candidate", ["semantic_method_does_the_work.py", "numpy_internals_do_the_work.py"])
def test_host_code_in_the_interpreter_is_not_the_answer_on_a_gpu(candidate):
    """#1, #5: on a GPU the code generator calls the replaced method with its own builder (the kernel
    adds 0.125) and no NumPy runs in a kernel (two copies of the row, halved): a wrong answer, as the
    CPU's ``hack_tampering`` now says in its own way."""
    config = EvalConfig(device="cuda", trials=2, timing=False, profile=False, torch_compute="forbid")
    result = evaluate(find_problem("04_softmax").small(), (HERE / candidate).read_text(), config)
    assert result.verdict in (Verdict.MISMATCH, Verdict.PRECISION), result.feedback
