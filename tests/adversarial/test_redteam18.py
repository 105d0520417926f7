"""The eighteenth red team's breaks (tests/adversarial/redteam18/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "redteam18"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.xfail(strict=True, reason="open: a move's record spans its written view's extent, not its elements")
def test_glue_answer_spanned_by_a_strided_move_is_seen(judge):
    """#1: glue's answer made the kernels' work by copying a kernel's two elements into its first and
    last elements through a strided view (``moved`` recorded the view's whole extent)."""
    result = judge(small_problem("11_roll"), (HERE / "strided_view_spans_glue.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


@pytest.mark.xfail(
    strict=True, reason="open: a launch's record spans a strided view's extent, looked at only at its ends"
)
def test_glue_answer_spanned_by_a_strided_view_handed_to_a_launch_is_seen(judge):
    """#1b: glue's answer inside a padded buffer made the kernels' work by handing a do-nothing kernel a
    two-element view of the padding (its extent spans the answer, and no output-sized region at its
    ends is the answer's)."""
    source = (HERE / "strided_view_handed_to_a_launch.py").read_text()
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback
