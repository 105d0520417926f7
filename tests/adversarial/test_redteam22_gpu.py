"""Red team 22's closings on a GPU (marker ``gpu``; run through the device tool): the answer check's new
round trip (``Expected``, ``Handed``) on device memory, the honest candidates it added, and what stays
open there (tests/adversarial/redteam22/README.md)."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent
HONEST = HERE.parent / "candidates" / "honest"
pytestmark = pytest.mark.gpu


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cuda", "trials": 2, "timing": False, "profile": False, "torch_compute": "forbid",
                         **overrides})  # fmt: skip


def test_decoys_nearer_the_output_are_seen_past_on_a_gpu():
    """Red team 19 #5 at the full size, 32 decoys (256 of the output's size are more than the job's memory:
    red team 16's GPU test): the samples ranked by the reference's output, sent back after ``Expected``."""
    source = (HERE / "redteam19" / "decoys_nearer_the_output.py").read_text().replace("DECOYS = 256", "DECOYS = 32")
    result = evaluate(find_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


@pytest.mark.parametrize("name", ["many_glue_copies_handed", "pointer_table_of_chunks"])
def test_red_team_22s_honest_candidates_are_ok_on_a_gpu(name):
    problem = find_problem("02_silu")
    result = evaluate(problem, (HONEST / f"{name}.py").read_text(), EvalConfig(device="cuda"))
    assert result.verdict is Verdict.OK, result.feedback


@pytest.mark.xfail(strict=True, reason="open on a GPU: no record of the addresses a kernel reads (README, 2)")
def test_glue_answer_read_at_a_distance_is_seen_on_a_gpu():
    """Red team 19 #15 on a GPU: ``ok`` there (the CPU's fix reads the interpreter's record)."""
    source = (HERE / "redteam19" / "answer_at_a_distance_from_the_input.py").read_text()
    result = evaluate(find_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
