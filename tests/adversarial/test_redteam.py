"""The red team's breaks of the judge/runner split (candidates in redteam/, table in its README),
each with the verdict it deserves; the cross-job ones in one warm pool, where the victims after
the attacker must get their solo verdicts and nothing of the attack may remain."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import DEVICE, small_problem
from tritongym.evaluate import EvalConfig, Verdict, evaluate

REDTEAM = Path(__file__).parent / "redteam"


def source(name: str) -> str:
    return (REDTEAM / f"{name}.py").read_text()


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 2.0} | overrides))


DEEP_MINUS = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n" + (
    "        return a + b\n\n\ndef never_called():\n    return " + "-" * 10_000 + "1\n"
)


@pytest.mark.parametrize("text", [source("deep_expression_drops_sample"), DEEP_MINUS], ids=["plus", "minus"])
@pytest.mark.parametrize("static", [True, False])
def test_a_text_too_deep_to_compile_is_the_candidates_verdict(text, static):
    result = evaluate(small_problem("vector_add"), text, config(static_checks=static))
    assert result.verdict is Verdict.INVALID_SOURCE, result.feedback + result.detail
    assert "nested too deeply" in result.feedback
