"""The bundled reference solutions pass on the CPU under Triton's interpreter."""

import pytest

from helpers import DEVICE, SECOND_SIZE_TRIALS
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import load_bundled


@pytest.mark.parametrize("problem", load_bundled(), ids=lambda p: p.name)
def test_bundled_solution_is_correct(judge, problem):
    result = judge(problem.small(), problem.solution, EvalConfig(device=DEVICE, trials=3))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert result.trials_passed == result.trials == 3 + SECOND_SIZE_TRIALS
    assert result.findings == []  # no guard fires on a legitimate all-Triton solution
