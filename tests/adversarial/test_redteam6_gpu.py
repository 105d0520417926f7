"""The sixth red team's attacks on a GPU (marker ``gpu``; run through the device tool): what a GPU
runner's compiler helper does for it."""

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, evaluate

HERE = Path(__file__).parent / "redteam6"
pytestmark = pytest.mark.gpu


def test_memory_the_compiler_helper_takes_for_a_runner_is_the_runners():
    """#1 on a GPU: the candidate has its helper's C compiler expand a macro bomb (cc1 would take about
    30 GB; the 2 GB of one level less stayed under the limit beside the runner): out of its host
    memory, where it was `ok` with the compiler's memory in no measure. The static checks are off
    (they refuse its reading ``CC``): the memory accounting is what is tested."""
    source = (HERE / "hogs_memory_in_the_compiler.py").read_text()
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=1.0, memory_limit_mb=3072, static_checks=False)
    result = evaluate(small_problem("vector_add"), source, config)
    assert result.verdict is Verdict.OUT_OF_MEMORY, (
        result.verdict,
        result.feedback,
        result.detail,
        result.stdout[-2000:],
    )
