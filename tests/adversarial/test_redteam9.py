"""Red team 9: what turns a model's completion into a reward (tests/adversarial/redteam9/README.md).

Each test plays a policy's answer against the reward code directly: pure functions, no evaluation.
"""

import asyncio
from pathlib import Path

import pytest

from tritongym.agent.episodes import TurnOutcome
from tritongym.agent.extract import extract
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.integrations.scoring import Scorer, problem_columns
from tritongym.integrations.trl import KernelEnvironment
from tritongym.integrations.verl import score_dict
from tritongym.problems import find_problem
from tritongym.rewards import KernelCoderReward, TieredReward
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


@pytest.mark.parametrize("argument", [None, 0, ["class ModelNew: pass"], {"source": "class ModelNew: pass"}])
def test_a_tool_call_whose_code_is_no_string_is_paid_as_no_code_not_dropped(warm_env, argument):
    """#2: TRL calls a tool with the JSON arguments of the model's call, unchecked; a ``code`` that is
    not a string was submitted, the Env's worker raised on it, and the evaluation became an
    infrastructure error: reward None, the rollout left out of training (advantage 0) where an answer
    without code is paid -1 (TieredReward); with ``reward_of="last"`` a failed honest attempt's -1 was
    dropped the same way. ``null`` was already no code, but the tool then raised on its feedback."""
    problem = find_problem("01_vector_add").small()
    scorer = Scorer(warm_env, reward=TieredReward(), config=EvalConfig(device="cpu", trials=1))
    environment = KernelEnvironment(scorer)
    environment.reset(**problem_columns(problem))
    feedback = asyncio.run(environment.evaluate_kernel(argument))
    [score] = environment.scores
    assert score.verdict == "no_code" and not score.infrastructure_error
    assert environment.get_reward() == TieredReward().not_correct
    assert "must be a string" in feedback
    for reward_of in ("best", "last"):  # after a failed honest attempt, neither choice drops the rollout
        environment = KernelEnvironment(scorer, reward_of=reward_of)
        environment.reset(**problem_columns(problem))
        assert "syntax_error" in asyncio.run(environment.evaluate_kernel("class ModelNew(:\n    pass\n"))
        asyncio.run(environment.evaluate_kernel(argument))
        assert [s.verdict for s in environment.scores] == ["syntax_error", "no_code"]
        assert environment.get_reward() == TieredReward().not_correct


def test_verls_hack_column_counts_every_verdict_of_the_hack_category():
    """#3: verl's ``hack`` extra (its metric of the share of hacks) tested the verdict's prefix
    ``hack_``: an output left partly unwritten (``uninitialized_output``, paid the hack penalty) read
    0, so a policy drifting to it showed no hacks."""
    result = EvalResult(problem="01_vector_add", verdict=Verdict.UNINITIALIZED_OUTPUT, feedback="unwritten")
    [score] = Scorer(None, reward=TieredReward()).finish([find_problem("01_vector_add")], ["text"], ["code"], [result])
    assert score.reward == TieredReward().hack_penalty
    assert score_dict(score)["hack"] == 1.0
    assert score_dict(score)["correct"] == 0.0
