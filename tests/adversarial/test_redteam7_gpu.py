"""The seventh red team's attacks on a GPU (marker ``gpu``; run through the device tool)."""

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, evaluate

HERE = Path(__file__).parent / "redteam7"
pytestmark = pytest.mark.gpu


def test_a_jit_subclass_that_compiles_another_kernel_is_not_the_candidates():
    """#1d on a GPU: a JITFunction subclass whose ``parse`` returns the bundled solution's kernel, under
    an empty decoy's function and source. Not the candidate's own kernel (its class is not Triton's),
    so its launch is compute that is not the candidate's: a hack verdict, never `ok`. The static
    checks are off: they refuse its ``open`` (another spelling reads the file as well), and the
    launch monitor's ownership rule is what is tested."""
    source = (HERE / "jit_subclass_parses_another_kernel.py").read_text()
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=1.0, torch_compute="forbid", static_checks=False)
    result = evaluate(small_problem("softmax"), source, config)
    assert result.verdict in (Verdict.HACK_TORCH_COMPUTE, Verdict.HACK_NO_TRITON), result.feedback
