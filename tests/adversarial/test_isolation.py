"""The judge out of the candidate's reach: one runnable candidate per root cause of issue 10
(forged results, reachable guard state, reachable timing, cross-job poisoning, penalty dodge,
memoisation), each with its exact verdict, and cross-job tests in one warm pool: an attacker, then
honest and wrong victims, whose verdicts equal their solo verdicts. GPU-only parts (timing,
coverage) are in test_gpu_exploits.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import CANDIDATES, DEVICE, small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import Problem

HERE = Path(__file__).parent / "candidates"
ROOT = os.geteuid() == 0
"""A root judge runs its runners as an unprivileged user, which may not even signal the judge."""


def source(name: str) -> str:
    return (HERE / f"{name}.py").read_text()


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 2.0} | overrides))


CASES = [
    # candidate, static checks, verdict, phrase in the feedback
    # (static checks off: they refuse importing tritongym, and the runtime's answer is what is tested)
    ("forges_verdict_through_frames", False, Verdict.CRASH, "it claimed 'ok'"),
    ("forges_infrastructure_error", False, Verdict.CRASH, "it claimed 'infrastructure_error'"),
    ("forges_result_on_every_fd", True, Verdict.CRASH, "broke the sandbox protocol during trial 1: bad frame magic"),
    ("poisons_next_job", False, Verdict.HACK_TAMPERING, "tritongym.evaluate.compare.compare_outputs"),
    ("kills_own_group", False, Verdict.CRASH, "died during trial 1 (signal SIGKILL)"),
    ("kills_its_judge", False, Verdict.CRASH, "during trial 1"),
]


@pytest.mark.parametrize(("candidate", "static", "verdict", "phrase"), CASES, ids=[c[0] for c in CASES])
def test_exploit_gets_its_verdict(judge, candidate, static, verdict, phrase):
    result = judge(small_problem("vector_add"), source(candidate), config(static_checks=static))
    assert result.verdict is verdict, result.feedback + result.detail
    assert phrase in result.feedback
    assert not result.correct


def test_the_next_job_and_the_judges_secrets_cannot_be_read(judge):
    result = judge(small_problem("vector_add"), source("reads_next_job"), config(static_checks=False))
    assert result.verdict is Verdict.OK, result.feedback + result.stderr
    assert "STOLEN []" in result.stdout, result.stdout


@pytest.mark.skipif(not ROOT, reason="runners get users of their own only under a root judge")
def test_a_runner_can_signal_no_other_process(judge):
    result = judge(small_problem("vector_add"), source("signals_everyone"), config(static_checks=False))
    assert result.verdict is Verdict.OK, result.feedback
    assert "SIGNALLABLE 0" in result.stdout, result.stdout


def test_the_reference_is_not_in_the_runner_to_wrap(judge):
    result = judge(small_problem("vector_add"), source("wraps_reference_forward"), config(static_checks=False))
    assert result.verdict is Verdict.OK, result.feedback
    assert "REFERENCE not found" in result.stdout, result.stdout


def test_launch_accounting_in_the_runner_is_the_runners_word(judge):
    """The known limit (docs/environment.md, threat model): a candidate that edits the runner's
    launch monitor and op recorder passes the launch count and PyTorch-compute checks; the forward
    whose launches do not run (its output still correct) gives it away. Its output is checked by
    the judge on fresh inputs: a wrong one fails whatever it claims. The recorder's profiler witness
    (red team 4) also sees the `add` that the cleared recorder lost."""
    result = judge(small_problem("vector_add"), source("edits_launch_counter"), config(torch_compute="forbid"))
    assert result.verdict in (Verdict.HACK_NO_TRITON, Verdict.HACK_TORCH_COMPUTE), result.feedback
    if result.verdict is Verdict.HACK_TORCH_COMPUTE:
        assert "add (hidden from the op recorder)" in result.feedback
    else:
        assert "even when none of the solution's Triton kernels ran" in result.feedback
    wrong = source("edits_launch_counter").replace("out = a + b", "out = a - b")
    assert judge(small_problem("vector_add"), wrong, config()).verdict is Verdict.MISMATCH


DOUBLE = Problem(
    name="double_ints",
    source=(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2\n\n\n"
        "def get_inputs():\n    return [torch.randint(-1000, 1000, (300,))]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    ),
)


def test_memoising_on_integer_inputs_fails_even_with_one_trial(judge):
    result = judge(DOUBLE, source("memoizes_integer_inputs"), config(trials=1))
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert result.trials == 2 and result.trials_passed == 1
    assert "Trial 2 of 2" in result.feedback


CORRECT = (CANDIDATES / "correct.py").read_text()
WRONG = (CANDIDATES / "mismatch.py").read_text()


@pytest.mark.parametrize(
    ("attacker", "static"),
    [("poisons_next_job", False), ("forges_result_on_every_fd", True), ("kills_own_group", False),
     ("reads_next_job", False)],
)  # fmt: skip
def test_victims_after_an_attacker_get_their_solo_verdicts(warm_env, attacker, static):
    problem, starts = small_problem("vector_add"), warm_env.sandbox_starts
    warm_env.submit(problem, source(attacker), config(static_checks=static)).result()
    honest = warm_env.submit(problem, CORRECT, config()).result()
    wrong = warm_env.submit(problem, WRONG, config()).result()
    assert honest.verdict is Verdict.OK, honest.feedback
    assert wrong.verdict is Verdict.MISMATCH, wrong.feedback
    assert warm_env.sandbox_starts == starts  # one warm judge throughout; every candidate had a runner of its own


@pytest.mark.skipif(not ROOT, reason="only root hands a runner to a user of its own")
def test_a_runner_given_its_own_user_forgets_the_zygotes_temporary_directory_and_has_a_name():
    """Triton's CUDA driver builds its helper module in a temporary directory when the runner warms
    up, before any job: the zygote's choice of that directory, made as root, must not follow the
    runner to its own user (no GPU runner of its own user could start). Its user has no passwd entry,
    so the runner names it in the environment for getpass."""
    import getpass
    import shutil
    import tempfile

    from tritongym.evaluate.judge.zygote import drop_privileges

    uid = 1_800_000_123
    tmp_path = Path(tempfile.mkdtemp())  # pytest's own is private to root: the runner could not reach it
    tmp_path.chmod(0o755)
    scratch = tmp_path / f"runner-{uid}" / "tmp"
    scratch.mkdir(parents=True)
    os.chown(scratch, uid, uid)
    root_only = tmp_path / "zygote-tmp"
    root_only.mkdir(mode=0o700)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.environ["TRITONGYM_RUNNERS_HOME"] = str(tmp_path)
            tempfile.tempdir = str(root_only)
            drop_privileges(uid)
            with tempfile.TemporaryDirectory() as made:
                os.write(write, f"{made} {getpass.getuser()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    made, user = os.read(read, 4096).decode().split()
    os.waitpid(child, 0)
    shutil.rmtree(tmp_path)
    assert made.startswith(str(scratch)), made
    assert user == f"runner-{uid}"  # Inductor asks getpass for a cache directory: no passwd entry needed
