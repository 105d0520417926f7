"""The second red team's breaks (tests/adversarial/redteam2/README.md), each fixed at its root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import CANDIDATES, DEVICE, PROCESSES_REFUSED, assert_fork_refused, small_problem
from tritongym.env import Task
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge.landlock import abi_version
from tritongym.evaluate.sandbox import remove_tree

HERE = Path(__file__).parent / "redteam2"


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 1.0} | overrides))


def test_a_tree_deeper_than_rmtree_can_recurse_is_removed(tmp_path):
    top = tmp_path / "job"
    top.mkdir()
    here = os.getcwd()
    os.chdir(top)
    try:
        for _ in range(3000):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(here)
    remove_tree(top)
    assert not top.exists()
    remove_tree(top)  # already gone: nothing to do, nothing raised


def test_a_deep_job_directory_costs_the_batch_nothing(warm_env):
    """Attack 6: the attacker keeps its own verdict and the others of its batch theirs."""
    problem = small_problem("vector_add")
    tasks = [
        Task(problem, (HERE / "deep_workdir_breaks_pool.py").read_text(), "attacker"),
        Task(problem, (CANDIDATES / "correct.py").read_text(), "correct"),
        Task(problem, (CANDIDATES / "mismatch.py").read_text(), "mismatch"),
    ]
    attacker, correct, mismatch = warm_env.evaluate_batch(tasks, config())
    assert attacker.verdict is Verdict.OK, attacker.feedback
    assert correct.verdict is Verdict.OK and mismatch.verdict is Verdict.MISMATCH, (correct.feedback, mismatch.feedback)


def test_a_name_too_long_for_the_protocol_does_not_turn_a_hack_into_a_crash(warm_env):
    """Attacks 7 and 8: a stray thread, and a custom op, named with 17 MiB."""
    threads = warm_env.submit(
        small_problem("vector_add"), (HERE / "long_thread_name_dodges_hack.py").read_text(), config()
    ).result()
    assert threads.verdict is Verdict.HACK_THREADS, threads.feedback
    ops = warm_env.submit(
        small_problem("softmax"), (HERE / "long_op_name_dodges_torch_compute.py").read_text(),
        config(torch_compute="forbid"),
    ).result()  # fmt: skip
    assert ops.verdict is Verdict.HACK_TORCH_COMPUTE, ops.feedback
    assert len(ops.feedback) < 5000


def test_torch_on_a_thread_forward_starts_and_joins_is_a_thread_hack(warm_env):
    """Attack 9: torch.softmax on a helper thread (dispatch modes are per thread), then a Triton copy."""
    result = warm_env.submit(
        small_problem("softmax"), (HERE / "torch_on_joined_thread.py").read_text(), config(torch_compute="forbid")
    ).result()
    assert result.verdict is Verdict.HACK_THREADS and "forward started 1 thread" in result.feedback, result.feedback


def test_torch_called_from_an_interpreted_kernel_body_is_refused_as_on_a_gpu(warm_env):
    """Attack 3: under the interpreter a @triton.jit body is Python. Triton's frontend now runs on the
    CPU too (evaluate/frontend.py) and refuses the body's call of a plain Python function before the
    kernel runs, as a GPU's compiler does (the op recorder inside interpreted launches, the first fix,
    stays as a second line)."""
    result = warm_env.submit(
        small_problem("softmax"),
        (HERE / "torch_inside_interpreted_kernel.py").read_text(),
        config(torch_compute="forbid"),
    ).result()
    assert result.verdict in (Verdict.RUNTIME_ERROR, Verdict.COMPILE_ERROR), result.feedback
    rejected = ("Unsupported function referenced: <function do_the_work", "Cannot access global variable do_the_work")
    assert any(message in result.feedback for message in rejected), result.feedback


def test_a_zygote_started_again_mid_job_holds_nothing_of_the_judge(monkeypatch):
    """Attack 2: a runner of the judge's user kills its zygote after its own job; the next job's runner
    comes from a zygote started again in the middle of that job, which must be a fresh executable (a
    fork of the judge would carry the job's frames: the reference's trial, the nonce)."""
    from tritongym.env import LocalEnv, PoolConfig

    if os.geteuid() != 0:
        monkeypatch.delenv("TRITONGYM_RUNNER_USER", raising=False)  # a non-root judge's runners share its user
    else:
        monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")
    problem = small_problem("vector_add")
    tasks = [
        Task(problem, (HERE / name).read_text(), name)
        for name in ("kills_zygote_after_judged.py", "reads_judges_trial.py")
    ]
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        killer, reader = env.evaluate_batch(tasks, config(static_checks=False))
    if PROCESSES_REFUSED:  # a runner: the killer's helper is never made, its zygote lives on
        assert_fork_refused(killer)
    else:
        assert killer.verdict is Verdict.OK, killer.feedback
    assert reader.verdict is Verdict.OK, reader.feedback
    assert "LEAK" not in reader.stdout and "no judge frame" in reader.stdout, reader.stdout


def test_a_zygote_started_again_imports_nothing_from_its_working_directory(tmp_path):
    """Attack 5: a runner that keeps the judge's user writes a package named tritongym into the judge's
    home, the working directory of a zygote started again; `-m` would put it first on sys.path."""
    from tritongym.evaluate.judge.runners import Zygote

    marker = tmp_path / "hijacked"
    planted = tmp_path / "tritongym"
    planted.mkdir()
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    zygote = Zygote("cpu", dict(os.environ), str(tmp_path))
    zygote.starts = 1  # started before: this start is a fresh executable, as after a zygote died
    try:
        zygote.start()
    finally:
        zygote.close()
    assert not marker.exists()


def test_memory_held_in_shared_memory_files_counts_against_the_limit(warm_env):
    """Attack 4: 2.5 GiB held in memfds (pages no resident set shows) under a 1.5 GiB limit."""
    result = warm_env.submit(
        small_problem("vector_add"), (HERE / "hides_memory_in_shmem.py").read_text(), config(memory_limit_mb=1536)
    ).result()
    assert result.verdict is Verdict.OUT_OF_MEMORY, result.feedback


LEAVES_SHM = """
import os, secrets
PATH = "/dev/shm/tritongym-test-" + secrets.token_hex(8)
try:
    with open(PATH, "wb") as fh:
        fh.write(bytes(1 << 20))
    print("LEFT", PATH)
except OSError:  # Landlock: a CPU runner writes beneath its job's directory only
    print("REFUSED", PATH)
"""


@pytest.mark.skipif(
    os.geteuid() != 0, reason="a non-root judge's runners share its user: their files look like its own"
)
def test_a_runner_users_files_in_shared_memory_go_with_the_job(warm_env):
    problem = small_problem("vector_add")
    result = warm_env.submit(problem, LEAVES_SHM + problem.solution, config(static_checks=False)).result()
    assert result.verdict is Verdict.OK, result.feedback
    path = next(line.split()[1] for line in result.stdout.splitlines() if line.startswith(("LEFT", "REFUSED")))
    assert not os.path.exists(path)
    if abi_version() > 0:
        assert "REFUSED" in result.stdout, result.stdout


def test_a_runner_of_the_judges_user_cannot_stop_its_zygote_to_rewrite_the_next_jobs(monkeypatch):
    """Attack 1: a runner that shares the judge's user (the GPU default, where CUDA IPC needs one
    user; any runner of a judge that is not root) SIGSTOPs its zygote so that a helper escapes every
    reaper and rewrites later candidates' solution.py. Its seccomp filter refuses signals to any
    process but itself and its group: the wrong candidate that follows keeps its own verdict."""
    from tritongym.env import LocalEnv, PoolConfig

    if os.geteuid() == 0:
        monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")
    problem = small_problem("vector_add")
    tasks = [
        Task(problem, (HERE / "stops_zygote_rewrites_next.py").read_text(), "attacker"),
        Task(problem, (CANDIDATES / "correct.py").read_text(), "honest"),
        Task(problem, (CANDIDATES / "mismatch.py").read_text(), "wrong"),
    ]
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        attacker, honest, wrong = env.evaluate_batch(tasks, config(static_checks=False))
    assert honest.verdict is Verdict.OK, honest.feedback
    assert wrong.verdict is Verdict.MISMATCH, wrong.feedback
    if PROCESSES_REFUSED:  # a runner: its helper is never made
        assert_fork_refused(attacker)
    else:
        assert attacker.verdict is Verdict.OK, attacker.feedback  # its helper got EPERM and ended
