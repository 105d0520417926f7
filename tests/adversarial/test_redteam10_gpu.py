"""The tenth red team's breaks on a GPU (marker ``gpu``; run through the device tool): what the CPU's
verdicts are now measured against. Written, not run, in the red team's session (no GPU)."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam10"
pytestmark = pytest.mark.gpu


def config() -> EvalConfig:
    return EvalConfig(device="cuda", trials=2, timing=False, profile=False, torch_compute="forbid")


def test_a_racy_reduction_is_wrong_on_a_gpu():
    """#1: the programs' plain read-modify-write of the output, right under the interpreter (which now
    refuses it as a data race), loses updates where the programs run at once (full size: 2^19
    programs)."""
    result = evaluate(find_problem("12_mse_loss"), (HERE / "racy_reduction.py").read_text(), config())
    assert result.verdict in (Verdict.MISMATCH, Verdict.PRECISION), result.feedback


@pytest.mark.parametrize("candidate", ["atomic_reduction.py", "lock_accumulation.py"])
def test_an_atomic_reduction_is_right_on_a_gpu(candidate):
    """#1's controls: the reductions the race check lets through (atomic adds, a spin lock) are right
    on a GPU too (small size: 13 partials, whose order changes the sum by a rounding or two)."""
    result = evaluate(find_problem("12_mse_loss").small(), (HERE / candidate).read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


def test_a_module_global_made_without_a_device_cannot_be_launched_with_on_a_gpu():
    """#3b on a GPU."""
    source = (HERE / "table_made_at_import.py").read_text()
    result = evaluate(find_problem("vector_add").small(), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback


def test_a_float32_dot_at_its_default_precision_is_tf32_on_a_gpu():
    """#2: what the interpreter now emulates: the default float32 ``tl.dot`` is `precision` on a GPU
    (TF32), and with ``input_precision="ieee"`` `ok`."""
    source = (HERE / "default_tf32_dot.py").read_text()
    result = evaluate(find_problem("06_linear_relu").small(), source, config())
    assert result.verdict is Verdict.PRECISION, result.feedback
    ieee = source.replace("tl.dot(x, w)", 'tl.dot(x, w, input_precision="ieee")')
    assert evaluate(find_problem("06_linear_relu").small(), ieee, config()).verdict is Verdict.OK


def test_an_output_made_without_a_device_cannot_be_launched_with_on_a_gpu():
    """#3: what the CPU now reports: Triton refuses a kernel argument in host memory."""
    source = (HERE / "output_on_the_host.py").read_text()
    result = evaluate(find_problem("vector_add").small(), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "cannot be accessed from Triton" in result.feedback


def test_a_kernel_that_ignores_its_inputs_strides_is_wrong_on_a_gpu():
    """#4: on a GPU the transposed input keeps its layout (its trial slots, and now the socket too)."""
    source = (HERE / "ignores_input_strides.py").read_text()
    result = evaluate(find_problem("10_transposed_broadcast_add").small(), source, config())
    assert result.verdict is Verdict.MISMATCH, result.feedback


def test_an_accumulator_never_zeroed_is_wrong_on_a_gpu():
    """#5: on a GPU the poison the judge fills free memory with makes the sum NaN (`mismatch`, or
    `uninitialized_output` where the NaN keeps the poison's bits)."""
    source = (HERE / "accumulates_into_empty.py").read_text()
    result = evaluate(find_problem("12_mse_loss").small(), source, config())
    assert result.verdict in (Verdict.MISMATCH, Verdict.UNINITIALIZED_OUTPUT), result.feedback


def test_a_kernel_that_reads_a_slice_as_contiguous_is_wrong_on_a_gpu():
    """#4b: a trial slot keeps a sliced input's layout on a GPU."""
    from tritongym.problems import Problem

    problem = Problem(name="sliced_input", source=(HERE / "sliced_input_problem.py").read_text())
    result = evaluate(problem, (HERE / "ignores_a_slices_strides.py").read_text(), config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
