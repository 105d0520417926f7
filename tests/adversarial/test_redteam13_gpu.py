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
