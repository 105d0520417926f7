"""The eleventh red team's breaks (tests/adversarial/redteam11/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "redteam11"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def test_a_data_race_caught_by_forward_still_fails(judge):
    """#1: the race check raises at the racy grid's end; forward catching it and running an atomic kernel
    was `ok`, where a GPU raises nothing and returns the racy kernel's lost updates (`mismatch`)."""
    result = judge(small_problem("12_mse_loss"), (HERE / "race_fallback.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "data race in kernel" in result.feedback
