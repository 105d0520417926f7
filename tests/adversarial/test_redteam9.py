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
    # the format alone: reasoning without code, the empty answer block no code (red team 23 #4)
    assert reward.fn(TurnOutcome(softmax, text, None, None)) == pytest.approx(0.5)
    assert KernelCoderReward()(text, softmax.solution) == pytest.approx(0.5)

    # the copy after the reasoning, the answer still hollow: the trainer scores the extracted program
    moved = text.replace("</think>\n", "").replace("One program per row", "</think>\nOne program per row")
    assert extract(moved, softmax.solution_class, "answer").code is None
    assert reward.fn(TurnOutcome(softmax, moved, None, None)) == pytest.approx(0.5)

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


def test_a_degenerate_repetitive_answer_is_scored_at_a_bounded_cost(monkeypatch):
    """The open item: difflib (autojunk off) visited each solution occurrence of each program character
    once per block it found, so one character repeated 32,000 times against 06_linear_relu's solution
    took ~160 million visits (36 s in the trainer's loop, holding every episode of the step). The
    kernel-coder reward now stops the block search at `WORK_LIMIT` visits (asserted on the visits,
    not on time) and pays the longest-common-substring bound, never above difflib's value: the
    format's 1.0 and a similarity below 1% (difflib's: 0.6%)."""
    from tritongym.rewards import similarity as module

    problem = find_problem("06_linear_relu")
    program = "class ModelNew:\n    pass\n" + "t" * 32000
    text = f"<think>\nplan\n</think>\n<answer>\n{FENCE}python\n{program}\n{FENCE}\n</answer>"
    searches = []

    def counted(program, solution, limit):
        try:
            found = real(program, solution, limit)
        except module._OverBudget as over:
            searches.append(over.work)
            raise
        searches.append(found[1])
        return found

    real = module._matched
    monkeypatch.setattr(module, "_matched", counted)
    code = extract(text, problem.solution_class, "answer").code
    assert code.strip() == program
    reward = build_reward("kernel-coder").fn(TurnOutcome(problem, text, code, None))
    solution = problem.solution.strip()
    assert searches and searches[0] <= module.WORK_LIMIT + len(solution) + 1, searches
    bound = 2 * module.longest_common_substring(program, solution) / (len(program) + len(solution))
    assert reward == pytest.approx(1.0 + bound) and bound < 0.01
