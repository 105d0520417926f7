"""Red team 9: what turns a model's completion into a reward (tests/adversarial/redteam9/README.md).

Each test plays a policy's answer against the reward code directly: pure functions, no evaluation.
"""

from pathlib import Path

import pytest

from tritongym.agent.episodes import TurnOutcome
from tritongym.agent.extract import extract
from tritongym.problems import find_problem
from tritongym.rewards import KernelCoderReward
from tritongym.train.rollout import build_reward

HERE = Path(__file__).parent / "redteam9"
FENCE = "```"


@pytest.fixture(scope="module")
def softmax():
    return find_problem("04_softmax")


def test_a_reference_copied_into_the_reasoning_beside_a_hollow_answer_earns_no_similarity(softmax):
    """#1: the kernel-coder reward scored the FIRST code block of the answer, wherever it was, while
    the turn's program is the one of its <answer> (the preset's extraction): a copy of the prompt's
    reference inside <think> beside an empty <answer> block was paid format 1.0 + similarity 0.33 for a
    turn recorded as no_code."""
    text = (HERE / "reference_in_reasoning_hollow_answer.txt").read_text()
    assert extract(text, softmax.solution_class, "answer").code is None  # nothing is submitted
    reward = build_reward("kernel-coder")
    assert not reward.needs_env
    assert reward.fn(TurnOutcome(softmax, text, None, None)) == pytest.approx(1.0)  # the format alone
    assert KernelCoderReward()(text, softmax.solution) == pytest.approx(1.0)

    # the copy after the reasoning, the answer still hollow: the trainer scores the extracted program
    moved = text.replace("</think>\n", "").replace("One program per row", "</think>\nOne program per row")
    assert extract(moved, softmax.solution_class, "answer").code is None
    assert reward.fn(TurnOutcome(softmax, moved, None, None)) == pytest.approx(1.0)

    # an honest answer is still paid its similarity, on both paths
    program = softmax.solution.strip()
    honest = f"<think>\none program per row\n</think>\n<answer>\n{FENCE}python\n{program}\n{FENCE}\n</answer>\n"
    code = extract(honest, softmax.solution_class, "answer").code
    assert code is not None
    assert reward.fn(TurnOutcome(softmax, honest, code, None)) == pytest.approx(2.0)
    assert KernelCoderReward()(honest, softmax.solution) == pytest.approx(2.0)
