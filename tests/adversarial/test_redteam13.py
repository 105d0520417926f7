"""The thirteenth red team's breaks (tests/adversarial/redteam13/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "redteam13"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize(("route", "replaced"), [("semantic", "TritonSemantic.add"), ("executor", "GridExecutor")])
def test_triton_python_an_interpreted_grid_runs_through_is_watched(judge, route, replaced):
    """#1: a method of Triton's semantic layer, or of the interpreter's grid executor, replaced at import
    computed the softmax with NumPy inside the solution's own launch: ``ok`` on the CPU."""
    source = (HERE / "semantic_method_does_the_work.py").read_text().replace('ROUTE = "semantic"', f'ROUTE = "{route}"')
    result = judge(small_problem("04_softmax"), source, config())
    assert result.verdict is Verdict.HACK_TAMPERING, result.feedback
    assert replaced in result.feedback

