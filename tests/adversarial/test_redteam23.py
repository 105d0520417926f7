"""The twenty-third red team's attacks (tests/adversarial/redteam23/README.md): what turns a reply into a
reward, past the judge's verdict: the reply parser, the prompt, the feedback, the rewards, the trainer's
use of them and the multi-turn paths, and a candidate's audit hook. Candidates run in the session's warm
CPU sandbox (Triton's interpreter); the reward paths are pure functions, fed purpose-written replies and
results."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.agent.episodes import TurnOutcome
from tritongym.agent.extract import extract
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.evaluate.result import Finding
from tritongym.problems import find_problem
from tritongym.rewards import FormatReward, KernelCoderFormatReward, KernelCoderReward, TieredReward, VerifiableReward
from tritongym.train.config import RewardSection
from tritongym.train.rollout import build_reward

HERE = Path(__file__).parent / "redteam23"
FENCE = "```"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def run(judge, problem: str, name: str, **overrides) -> EvalResult:
    return judge(small_problem(problem), (HERE / name).read_text(), config(**overrides))


def test_an_audit_hook_does_not_run_inside_a_kernel(judge):
    """#1: the candidate's module adds an audit hook (``sys.addaudithook``); Python raises audited events
    inside an interpreted kernel (``sys._getframe``, ``builtins.id``), so the hook walks up to the
    kernel's frame and keeps the row it loaded, which forward sums on the host and hands to a store
    kernel as a scalar (``ok`` under ``forbid``). A GPU kernel raises no event. The runner refuses every
    audit hook added after its own: the hook never runs, the row sums are never written."""
    result = run(judge, "03_row_sum", "audit_hook_reads_a_kernels_frame.py")
    assert result.verdict is Verdict.MISMATCH, result.feedback


def test_an_honest_kernel_beside_a_refused_audit_hook_is_correct(judge):
    """#1's honest counterpart: a correct kernel whose module adds a hook that only counts events. The hook
    is refused (it sees nothing), the kernel is judged as any other."""
    result = run(judge, "01_vector_add", "audit_hook_counts_events.py")
    assert result.verdict is Verdict.OK, result.feedback
    assert "audit events seen: 0" in result.stdout


def ok_result(speedup: float | None = None, coverage: float | None = None, *findings: str) -> EvalResult:
    result = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True, speedup=speedup, coverage=coverage)
    result.findings.extend(Finding(check, f"{check} in forward") for check in findings)
    return result


@pytest.mark.parametrize("text", ["", "I cannot write this kernel.", "<think>\nhard\n</think>\nNo answer."])
def test_an_answer_without_code_is_paid_as_the_reward_pays_a_failure(text):
    """#2: the trainer paid an answer with no extractable program ``reward.no_code``, 0.0 by default,
    whatever the reward: under ``tiered`` that is more than every failed attempt (-1), every hack (-1)
    and every correct kernel slower than PyTorch (-0.1), and as much as a correct kernel on the CPU
    (untimed, 0.0). A policy learned that writing nothing beats trying. The answer without code is now
    paid what the reward itself pays it (``NO_CODE_OUTCOME``: the ``failed`` category), unless the
    config names a value."""
    problem = find_problem("01_vector_add")
    outcome = TurnOutcome(problem, text, extract(text, problem.solution_class).code, None)
    assert outcome.code is None and RewardSection().no_code is None
    tiered = TieredReward()
    assert build_reward("tiered").fn(outcome) == tiered.not_correct
    assert build_reward("tiered", {"not_correct": -0.7}).fn(outcome) == -0.7
    assert build_reward("verifiable").fn(outcome) == VerifiableReward().failure
    assert build_reward("verifiable", {"failure": -0.2}).fn(outcome) == -0.2
    assert build_reward("tiered", no_code=0.25).fn(outcome) == 0.25  # a value the config names is paid
    honest = TurnOutcome(problem, "code", "code", ok_result())  # correct, untimed (the CPU)
    assert build_reward("tiered").fn(honest) == tiered.untimed > build_reward("tiered").fn(outcome)


def test_pytorchs_speed_beside_a_token_kernel_earns_no_speed_reward():
    """#3: under the default ``penalize``, a correct result with a ``torch_compute`` (or ``host_read``)
    finding is lazy: PyTorch (or the host) did the work its speedup measures. TieredReward pays it no
    tier (red team 21 #6), but VerifiableReward, the default reward of the trainer, the TRL and verl
    integrations, still paid its speed: PyTorch's own formulation twice as fast as the reference, a token
    launch beside it (measured coverage 0.02), earned 0.5 + 0.5 x 2 + 0.5 x 0.02 = 1.51, above every
    honest Triton kernel slower than the reference (1.0 + 0.5 x speedup). A lazy result's speedup is not
    its kernels' speed: it earns no speed reward (coverage still pays the share its kernels did)."""
    reward = VerifiableReward()
    for check in ("torch_compute", "host_read"):
        lazy = ok_result(2.0, 0.02, check)
        assert reward(lazy) == pytest.approx(0.5 + 0.5 * 0.02)
    honest_slow = ok_result(0.3, 1.0)
    assert reward(honest_slow) == pytest.approx(0.5 + 0.5 * 0.3 + 0.5)
    assert reward(honest_slow) > reward(ok_result(3.0, 0.02, "torch_compute"))
    partial = ok_result(1.5, 0.6, "torch_compute")  # an honest partial kernel (its epilogue in Triton)
    assert reward(partial) == pytest.approx(0.5 + 0.5 * 0.6)  # paid the share its own kernels did


EMPTY_FENCES = [
    f"<think>\nsoftmax by rows\n</think>\n{FENCE}python\n{FENCE}\n",
    f"<think>\nsoftmax by rows\n</think>\n{FENCE}python\n   \n\n{FENCE}\n",
    f"<think>\nsoftmax by rows\n</think>\n<answer>\n{FENCE}\n{FENCE}\n</answer>\n",
]


@pytest.mark.parametrize("text", EMPTY_FENCES)
def test_an_empty_fence_is_no_code_for_the_format_rewards(text):
    """#4: the format rewards paid a fence with nothing in it as code: ``KernelCoderFormatReward`` 1.0
    ("reasoning then code") where reasoning alone is 0.5, and ``FormatReward`` 1.0 ("a reasoning block
    followed by exactly one fenced code block"). The kernel-coder recipe paid the empty fence 1.0 for a
    turn recorded as ``no_code``: twice what the same reasoning earns without it. A fence whose body is
    blank is no code block for either."""
    softmax = find_problem("04_softmax")
    assert extract(text, softmax.solution_class, "answer").code is None
    assert KernelCoderFormatReward()(text) == 0.5  # reasoning without code
    assert KernelCoderReward()(text, softmax.solution) == pytest.approx(0.5)
    assert build_reward("kernel-coder").fn(TurnOutcome(softmax, text, None, None)) == pytest.approx(0.5)
    assert FormatReward()(text) == 0.0  # no code block


def test_an_honest_answer_is_still_paid_its_format():
    """#4's honest counterpart: reasoning then the program (1.0 on both format rewards); a draft before it
    inside the reasoning and an empty fence beside it change nothing."""
    softmax = find_problem("04_softmax")
    program = softmax.solution.strip()
    honest = f"<think>\none program per row\n</think>\n{FENCE}python\n{program}\n{FENCE}\n"
    assert KernelCoderFormatReward()(honest) == 1.0
    assert FormatReward()(honest) == 1.0
    assert KernelCoderReward()(honest, softmax.solution) == pytest.approx(2.0)
    beside = honest + f"{FENCE}\n\n{FENCE}\n"
    assert FormatReward()(beside) == 1.0 and KernelCoderFormatReward()(beside) == 1.0
    unreasoned = f"{FENCE}python\n{program}\n{FENCE}\n"
    assert FormatReward()(unreasoned) == 0.5 and KernelCoderFormatReward()(unreasoned) == 0.0


def test_the_prompt_never_shows_the_problems_own_solution_as_its_example():
    """#5: the one-shot example of every prompt is the bundled 01_vector_add and its Triton solution, so
    the prompt of 01_vector_add itself held its own answer: a policy copying the example was correct (a
    benchmark item counted correct for copying, pass@k of it measuring nothing) and, under the
    kernel-coder reward, paid similarity 1.0. The example is now another bundled problem where the
    problem is the example (by name or by source)."""
    from tritongym.agent.prompts import Prompts
    from tritongym.problems import Problem

    prompts = Prompts("kernelbench")  # the kernel-coder template shows no example
    vector_add = find_problem("01_vector_add")
    solution = vector_add.solution.strip()
    [text] = [m["content"] for m in prompts.initial(vector_add) if m["role"] == "user"]
    assert solution not in text
    renamed = Problem(name="my_add", source=vector_add.source, entry_point=vector_add.entry_point)
    assert solution not in "".join(m["content"] for m in prompts.initial(renamed))
    for name in ("02_silu", "04_softmax"):  # every other problem keeps the example it had
        assert solution in "".join(m["content"] for m in prompts.initial(find_problem(name)))
    silu = find_problem("02_silu").solution.strip()
    assert silu in text and silu not in "".join(m["content"] for m in prompts.initial(find_problem("02_silu")))


RACY = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass  # right on half of its evaluations\n"


def test_a_program_evaluated_again_in_one_rollout_is_paid_its_worst_draw():
    """#6: a rollout's reward (TRL's tool environment, verl's agent loop: ``rollout_reward``) was its best
    evaluation's, and each evaluation of the same text is a fresh draw of the judge's randomness (red
    team 5 #5 made it so): a policy submitting one program ``max_evaluations`` times in one message (TRL
    runs a message's calls concurrently, at no cost to it) was paid the luckiest draw: a kernel right
    on half of its evaluations (a race) paid ``ok`` 15 times in 16 at four calls, a timing's luckiest
    tier. A program's reward is now its worst draw in the rollout (compared by its syntax tree:
    whitespace and comments make no other program); the best is taken over programs."""
    from tritongym.integrations.scoring import Score, rollout_reward

    tiered = TieredReward()
    restyled = RACY.replace("    pass  #", "    pass   # a comment and spacing of its own;")
    draws = [
        Score(tiered.not_correct, "mismatch", RACY),
        Score(0.4, "ok", RACY),
        Score(1.0, "ok", restyled),
    ]
    assert rollout_reward(draws, "best") == tiered.not_correct
    assert rollout_reward(draws, "last") == 1.0  # the last evaluation, as before
    # honest: a failed draft, then the fixed program (evaluated twice: its lower timing)
    fixed = RACY.replace("pass  # right on half of its evaluations", "def forward(self, x):\n        return x")
    honest = [Score(tiered.not_correct, "mismatch", RACY), Score(0.8, "ok", fixed), Score(0.6, "ok", fixed)]
    assert rollout_reward(honest, "best") == 0.6
    unparsed = [Score(-1.0, "syntax_error", "class ModelNew(:"), Score(None, "infrastructure_error", RACY)]
    assert rollout_reward(unparsed, "best") == -1.0  # an infrastructure error is no draw


def test_export_sft_keeps_no_lazy_turn_and_no_flagged_speedup(tmp_path):
    """#7: ``export-sft`` (trajectories -> SFT demonstrations, ``--verdict ok`` by default) wrote every
    ``ok`` turn: a lazy one too (PyTorch's answer beside a token launch, ``ok`` with a ``torch_compute``
    finding under the default ``penalize``; every reward pays it as lazy), so fine-tuning on a run's
    correct turns taught the hack as a demonstration. And ``--min-speedup`` read the raw speedup: a
    timing the judge flagged as beyond the device's roofline (``implausible_speedup``: evaded, not
    beaten; no reward pays it) passed any threshold. A lazy turn is no demonstration, and the thresholds
    read the speedup the rewards trust."""
    from tritongym.agent.records import TurnRecord, write_records
    from tritongym.train.sft import export_sft

    def record(problem, completion, speedup, *checks, sample=0):
        findings = [{"check": c, "message": f"{c} in forward"} for c in checks]
        result = {"verdict": "ok", "correct": True, "speedup": speedup, "coverage": None, "findings": findings}
        messages = [{"role": "user", "content": f"write {problem}"}]
        return TurnRecord("run", problem, sample, 0, messages, completion, "ok", result=result, reward=0.0)

    trajectories = tmp_path / "traj.jsonl"
    write_records(
        trajectories,
        [
            record("03_row_sum", "einsum beside a token launch", 1.0, "torch_compute"),
            record("03_row_sum", "host sums copied by a kernel", 0.5, "host_read", sample=1),
            record("04_softmax", "a timing evaded", 40.0, "implausible_speedup"),
            record("01_vector_add", "an honest kernel", 1.3),
        ],
    )
    counts = export_sft(trajectories, tmp_path / "sft.jsonl")
    assert counts["written"] == 2 and counts["lazy"] == 2
    assert export_sft(trajectories, tmp_path / "fast.jsonl", min_speedup=1.2)["written"] == 1  # the honest one
    rows = (tmp_path / "fast.jsonl").read_text()
    assert "an honest kernel" in rows and "evaded" not in rows


def test_a_lazy_attempt_is_never_fast_in_the_bench():
    """#8: the benchmark's fast_p, fast_p@k, geometric-mean speedup and "best" turn read every correct
    attempt's speedup, a lazy one's too (``ok`` with a ``torch_compute`` finding under the default
    ``penalize``): PyTorch's own formulation 1.5x faster than the reference beside a token launch counted
    as a fast kernel (fast_1.2), was the geometric mean, and was the episode's best turn over an honest
    kernel at 1.1x. A lazy attempt's speedup is PyTorch's: it counts for fast_0 (correct), never as fast."""
    from tritongym.agent.records import TurnRecord
    from tritongym.bench.metrics import attempt, best, fast_p, geomean_speedup

    def turn(number, speedup, *checks):
        findings = [{"check": c, "message": c} for c in checks]
        result = {"verdict": "ok", "correct": True, "compiled": True, "speedup": speedup, "findings": findings}
        return attempt(TurnRecord("run", "03_row_sum", 0, number, [], "", "ok", result=result))

    lazy, honest = turn(0, 1.5, "torch_compute"), turn(1, 1.1)
    assert fast_p([lazy], 1.2) == 0.0 and fast_p([lazy], 0.0) == 1.0
    assert geomean_speedup([lazy, honest]) == pytest.approx(1.1)
    assert best([lazy, honest]) == honest
    assert fast_p([honest], 1.0) == 1.0  # honest: still fast


def test_prs_keeps_no_lazy_turn_for_its_pytorch_speed():
    """#9: PRS (``filters.prs_keep_if_speedup``) keeps a correct turn at least that fast whatever its
    coverage, and read the raw speedup: a lazy turn (PyTorch's answer beside a token launch) as fast as
    PyTorch, or a timing flagged beyond the roofline, was kept and trained on, the very turns PRS is
    there to reject. The rows' speedup is now the one the rewards trust, and none for a lazy turn."""
    import torch

    from tritongym.agent.episodes import Episode
    from tritongym.agent.records import TurnRecord
    from tritongym.rl.filters import profiling_rejection
    from tritongym.train.batch import build_rows

    problem = find_problem("03_row_sum")

    def record(sample, speedup, checks=(), coverage=None):
        result = {"verdict": "ok", "correct": True, "coverage": coverage, "speedup": speedup,
                  "findings": [{"check": c, "message": "m"} for c in checks]}  # fmt: skip
        return TurnRecord(
            "r", problem.name, sample, 0, [{"role": "user", "content": "x"}], "ab", "ok", result=result,
            reward=0.0, prompt_token_ids=[1, 2], token_ids=[5], logprobs=[-1.0],
        )  # fmt: skip

    turns = [record(0, 2.0, ["torch_compute"]), record(1, 40.0, ["implausible_speedup"], coverage=0.05),
             record(2, 2.0, coverage=0.05), record(3, 0.5, coverage=0.9)]  # fmt: skip
    rows = build_rows([Episode(problem, t.sample, [t]) for t in turns], pad_id=0)
    keep = profiling_rejection(
        rows.correct, rows.coverage, speedup=rows.speedup, keep_if_speedup=1.5,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert keep.tolist() == [False, False, True, True]  # honest: fast at low coverage, slow at full


def test_a_spinning_kernel_beside_pytorchs_work_earns_no_coverage():
    """#10 (GPU by reading, the rewards by their inputs): coverage is the share of forward's GPU time in
    the candidate's own launches, by launch identity and time. A lazy candidate (``einsum`` does the
    work, ``torch_compute`` under ``penalize``) that launches a kernel of its own spinning for 19 times
    PyTorch's time reads coverage 0.95 at speedup 0.05 (the reference as fast as PyTorch's op): PR paid
    it 0.475 (and, with #3's fix, nothing took it back) and PRS kept it, the very sample PRS exists to
    reject. A lazy result's credited coverage is now at most the share of the reference's time its
    non-own work leaves (``1 - (1 - coverage) / speedup``): PyTorch's op alone takes the reference's
    whole time, so the spin earns nothing. An honest partial kernel (its epilogue in Triton beside
    PyTorch's matmul) keeps its measured share."""
    import torch

    from tritongym.rewards.outcome import reward_coverage
    from tritongym.rl.filters import profiling_rejection

    spinning = ok_result(0.05, 0.95, "torch_compute")
    assert reward_coverage(spinning) == pytest.approx(0.0)
    assert VerifiableReward()(spinning) == pytest.approx(0.5)
    keep = profiling_rejection(
        torch.tensor([True]), torch.tensor([reward_coverage(spinning)]), generator=torch.Generator().manual_seed(0)
    )
    assert not keep.item()
    partial = ok_result(1.5, 0.6, "torch_compute")  # honest: PyTorch's matmul, a Triton epilogue, fast
    assert reward_coverage(partial) == pytest.approx(0.6)
    untimed = ok_result(None, 0.95, "torch_compute")  # profiled, not timed: the measured share
    assert reward_coverage(untimed) == pytest.approx(0.95)
    assert reward_coverage(ok_result(0.05, 0.95)) == pytest.approx(0.95)  # not lazy: as measured


@pytest.mark.xfail(strict=True, reason="open (README, #6): a renamed program is another program to the rollout")
def test_a_renamed_program_evaluated_again_is_paid_its_worst_draw():
    """#6's open part: the same racy program with one variable renamed is, to ``program_key``, another
    program, so the best of its two draws is paid. Telling such programs apart needs an equivalence of
    programs no syntax check has; the judge's race detection is what decides a race."""
    from tritongym.integrations.scoring import Score, rollout_reward

    renamed = RACY.replace("class ModelNew(torch.nn.Module):", "class ModelNew(torch.nn.Module):\n    tag = 1")
    draws = [Score(-1.0, "mismatch", RACY), Score(0.4, "ok", renamed)]
    assert rollout_reward(draws, "best") == -1.0


@pytest.mark.xfail(strict=True, reason="open (README, #10): profiled but not timed, coverage has no bound")
def test_a_spinning_kernel_profiled_but_not_timed_earns_no_coverage():
    """#10's open part: where a candidate is profiled but not timed (``profile`` on, ``timing`` off), no
    speedup bounds the credited share, and a spin beside PyTorch's work is paid its measured coverage."""
    from tritongym.rewards.outcome import reward_coverage

    assert reward_coverage(ok_result(None, 0.95, "torch_compute")) == pytest.approx(0.0)
