import pytest

from tritongym.evaluate import EvalResult, Verdict
from tritongym.evaluate.result import Finding
from tritongym.rewards import (
    FormatReward,
    KernelCoderFormatReward,
    KernelCoderReward,
    TieredReward,
    VerifiableReward,
    extract_code,
    similarity_reward,
    weighted_sum,
)
from tritongym.rewards.outcome import reward_coverage


def row(verdict, correct=False, speedup=None, coverage=None):
    return {"verdict": verdict, "correct": correct, "speedup": speedup, "coverage": coverage}


def test_verifiable_reward_by_hand():
    reward = VerifiableReward()
    assert reward(row("infrastructure_error")) is None
    assert reward(row("hack_input_mutation")) == -1.0
    assert reward(row("mismatch")) == 0.0
    assert reward(row("ok", True)) == 1.0  # unprofiled, no lazy finding: its kernels did the work (coverage 1)
    assert reward(row("ok", True, speedup=2.0, coverage=0.9)) == pytest.approx(0.5 + 1.0 + 0.45)
    assert reward(row("ok", True, speedup=10.0, coverage=1.0)) == pytest.approx(0.5 + 1.5 + 0.5)
    assert reward(row("ok", True, speedup=-1.0)) == 1.0
    assert VerifiableReward(w_coverage=0.0)(row("ok", True, 1.0, 1.0)) == pytest.approx(1.0)


@pytest.mark.parametrize("reward", [VerifiableReward(hack_penalty=-2.0), TieredReward(hack_penalty=-2.0)])
def test_rewards_follow_the_verdict_category(reward):
    assert reward(row("uninitialized_output")) == -2.0  # cheating, though not named hack_*
    assert reward(row("hack_forbidden_api")) == -2.0
    assert reward(row("infrastructure_error")) is None
    assert reward(row("out_of_memory")) == reward(row("mismatch")) > -2.0
    assert reward(row("ok", True)) >= 0.0
    with pytest.raises(ValueError, match="not_a_verdict"):
        reward(row("not_a_verdict"))


def test_a_speedup_flagged_implausible_earns_nothing():
    flagged = row("ok", True, speedup=50.0, coverage=1.0) | {
        "findings": [{"check": "implausible_speedup", "message": "below the roofline"}]
    }
    assert VerifiableReward()(flagged) == pytest.approx(0.5 + 0.5)
    assert TieredReward()(flagged) == TieredReward()(row("ok", True))
    result = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True, speedup=50.0)
    result.findings.append(Finding("implausible_speedup", "below the roofline"))
    assert VerifiableReward()(result) == 1.0


def test_an_untrusted_timing_earns_no_more_than_a_slow_honest_kernel():
    untrusted = row("ok", True, speedup=None, coverage=1.0) | {
        "findings": [{"check": "timing_untrusted", "message": "no speedup: the GPU had other work on it"}]
    }
    slow = row("ok", True, speedup=0.5, coverage=1.0)
    for reward in (VerifiableReward(), TieredReward()):
        assert reward(untrusted) <= reward(slow)
    assert TieredReward()(untrusted) == TieredReward().slower
    assert TieredReward()(row("ok", True)) == TieredReward().untimed  # untimed on the CPU: unchanged


def test_rewards_read_eval_results_directly():
    ok = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True)
    infra = EvalResult(problem="p", verdict=Verdict.INFRASTRUCTURE_ERROR, feedback="")
    assert VerifiableReward()(ok) == 1.0 and VerifiableReward()(infra) is None
    assert TieredReward()(ok) == 0.0 and TieredReward()(infra) is None


def finding(check):
    return {"check": check, "message": "m"}


@pytest.mark.parametrize("check", ["torch_compute", "host_read"])
def test_an_unprofiled_lazy_kernel_earns_no_coverage(check):
    """On the CPU nothing is profiled: a correct result's coverage for PR is 1 without a lazy finding
    and 0 with one, so a lazy kernel is paid less than an honest one of the same speed (red: both 0.5)."""
    honest = row("ok", True) | {"findings": [finding("sizes")]}
    lazy = row("ok", True) | {"findings": [finding(check)]}
    assert reward_coverage(honest) == 1.0 and reward_coverage(lazy) == 0.0
    assert VerifiableReward()(honest) == pytest.approx(1.0) and VerifiableReward()(lazy) == pytest.approx(0.5)
    result = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True)
    result.findings.append(Finding(check, "PyTorch compute ran inside forward"))
    assert VerifiableReward()(result) == pytest.approx(0.5)  # an EvalResult as a JSONL row


def test_a_measured_coverage_wins_over_the_findings():
    profiled_lazy = row("ok", True, coverage=0.8) | {"findings": [finding("torch_compute")]}
    assert reward_coverage(profiled_lazy) == 0.8
    assert reward_coverage(row("ok", True, coverage=1.7)) == 1.0  # clipped to a share


@pytest.mark.parametrize("name", ["mismatch", "hack_no_triton", "infrastructure_error", "no_code", "unevaluated"])
def test_only_a_correct_result_has_a_coverage_proxy(name):
    assert reward_coverage(row(name) | {"findings": [finding("torch_compute")]}) is None
    assert reward_coverage(row(name)) is None


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (row("ok", True, 3.0), 1.0),
        (row("ok", True, 2.5), 0.8),
        (row("ok", True, 1.5), 0.6),
        (row("ok", True, 1.2), 0.4),
        (row("ok", True, 1.0), 0.2),
        (row("ok", True, 0.9), -0.1),
        (row("mismatch"), -1.0),
        (row("runtime_error"), -1.0),
        (row("compile_error"), -1.0),
        (row("timeout"), -1.0),
        (row("hack_input_mutation"), -1.0),
    ],
)
def test_tiered_reward(result, expected):
    assert TieredReward()(result) == expected


FENCE = "```"


def test_format_reward():
    reward = FormatReward()
    code = f"{FENCE}python\nprint(1)\n{FENCE}"
    assert reward(f"<think>plan the tiles</think>\n{code}") == 1.0
    assert reward(code) == 0.5
    assert reward(f"<think></think>{code}") == 0.5  # an empty reasoning block is no reasoning
    assert reward(f"{code}\n<think>afterthought</think>") == 0.5
    assert reward(f"<think>x</think>{code}\n{code}") == 0.0
    assert reward("<think>x</think> no code") == 0.0


def test_similarity_reward():
    solution = "def f(x):\n    return x + 1\n"
    assert similarity_reward(f"{FENCE}python\n{solution}{FENCE}", solution) == 1.0
    assert similarity_reward("no code here", solution) == 0.0
    assert similarity_reward(f"{FENCE}\nabcd\n{FENCE}", "abce") == pytest.approx(0.75)
    assert extract_code(f"{FENCE}\ndraft\n{FENCE} then {FENCE}python\nfinal\n{FENCE}") == "final\n"


def test_weighted_sum():
    assert weighted_sum([1.0, 0.5], [0.2, 0.8]) == pytest.approx(0.6)
    assert weighted_sum([1.0, None], [0.2, 0.8]) is None
    with pytest.raises(ValueError, match="2 rewards but 1 weights"):
        weighted_sum([1.0, 0.5], [1.0])


def test_an_answer_without_code_is_a_failure_not_an_error_for_every_reward():
    from tritongym.rewards import TieredReward, VerifiableReward

    assert VerifiableReward()({"verdict": "no_code"}) == VerifiableReward().failure
    assert TieredReward()({"verdict": "no_code"}) is not None


def test_kernel_coder_format_reward():
    reward = KernelCoderFormatReward()
    code = f"{FENCE}python\nprint(1)\n{FENCE}"
    assert reward(f"<think>plan the tiles</think>\n{code}") == 1.0
    assert reward(f"<think>plan</think>{code}\n{code}") == 1.0  # several blocks: still reasoning then code
    assert reward("<think>plan the tiles</think> no code yet") == 0.5
    assert reward(f"<think>draft {code}</think> nothing after") == 0.5  # code inside the reasoning is no answer
    assert reward(code) == 0.0
    assert reward(f"{code}\n<think>afterthought</think>") == 0.5  # the block is before the reasoning
    assert reward(f"<think></think>{code}") == 0.0  # empty reasoning
    assert reward(f"<think>never closed {code}") == 0.0
    assert reward("") == 0.0


def test_similarity_first_block_and_kernel_coder_reward():
    first, last = "abcd", "wxyz"
    text = f"<think>t</think>{FENCE}python\n{first}\n{FENCE}\n{FENCE}\n{last}\n{FENCE}"
    # SequenceMatcher("abcd", "abce"): 3 matching characters of 8 -> 2*3/8 = 0.75
    assert similarity_reward(text, "abce", block="first") == pytest.approx(0.75)
    assert similarity_reward(text, "abce", block="last") == 0.0
    assert similarity_reward(text, "abce") == 0.0  # today's default: the last block
    # autojunk off: on a solution of >= 200 characters autojunk would drop every popular character
    # (the ratio would be 1/210); the true ratio matches 2 of every 3 characters
    code, solution = "xay" * 70, "xby" * 70
    assert similarity_reward(f"{FENCE}\n{code}\n{FENCE}", solution, block="first") == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="'first' or 'last'"):
        similarity_reward(text, "x", block="middle")
    assert KernelCoderReward()(text, "abce") == pytest.approx(1.0 + 0.75)
    assert KernelCoderReward(w_format=0.5, w_similarity=2.0)("<think>t</think>", "abce") == pytest.approx(0.25)


def test_tiered_reward_pays_a_failure_the_same_whichever_category_the_candidate_chose():
    """Once its code runs, a candidate picks the category of its failure (red team 4, #5): a compile
    error re-raised as a plain exception, or caught and turned into a wrong output."""
    tiered = TieredReward()
    paid = {tiered(row(v)) for v in ("compile_error", "runtime_error", "mismatch", "timeout", "crash", "out_of_memory")}
    assert paid == {tiered.not_correct}
    assert tiered(row("ok", True, speedup=0.5)) == tiered.slower > tiered.not_correct
