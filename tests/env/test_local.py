"""The local pool: warm reuse, a fresh runner per candidate, recovery after faults, priorities, nothing lost."""

import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from helpers import CANDIDATES, DEVICE, PROCESSES_REFUSED, small_problem
from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.sandbox import BACKSTOP_S
from tritongym.problems import Problem

CONFIG = EvalConfig(device=DEVICE, trials=2)
RUNTIME_CONFIG = EvalConfig(device=DEVICE, trials=2, static_checks=False)
"""For candidates the static checks would refuse: these tests exercise the runtime defences."""
CORRECT = (CANDIDATES / "correct.py").read_text()


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


@pytest.fixture
def env(warm_env):
    """The session's warm sandbox: every test leaves it serving (that is what the pool promises),
    and counts of sandbox starts are compared with the count before the test."""
    return warm_env


def test_one_warm_sandbox_serves_every_bundled_problem_without_restarting(env):
    starts = env.sandbox_starts
    tasks = [Task(p.small(), p.solution, p.name) for p in __import__("tritongym").problems.load_bundled()]
    results = dict((t.label, r) for t, r in env.evaluate_many(tasks, CONFIG))
    assert len(results) == len(tasks) and all(r.verdict is Verdict.OK for r in results.values())
    assert all(not r.findings for r in results.values())
    assert env.sandbox_starts == starts
    assert env.fingerprint()["versions"]["torch"]


@pytest.mark.parametrize(
    ("name", "verdict", "reason"),
    [
        ("patches_torch", Verdict.HACK_TAMPERING, "replaced, added or removed: torch.allclose"),
        ("changes_torch_settings", Verdict.HACK_TAMPERING, "changed torch settings: default_dtype"),
        ("leaves_thread", Verdict.HACK_THREADS, "threads still running: lingering"),
        # a runner may not fork (red team 4 #7): the candidate's fork fails in forward
        ("forks", Verdict.RUNTIME_ERROR, "Operation not permitted")
        if PROCESSES_REFUSED
        else ("forks", Verdict.HACK_THREADS, "child processes still running"),
    ],
)
def test_a_tainting_candidate_is_judged_and_the_next_one_runs_in_a_fresh_runner(env, name, verdict, reason):
    problem, starts = small_problem("vector_add"), env.sandbox_starts[0]
    result = env.submit(problem, candidate(name), RUNTIME_CONFIG).result()
    assert result.verdict is verdict and reason in result.feedback
    after = env.submit(problem, CORRECT, CONFIG).result()
    assert after.verdict is Verdict.OK and not after.findings
    assert env.sandbox_starts == [starts]  # the judge stays warm; each candidate had a runner of its own


@pytest.mark.parametrize(("name", "verdict"), [("segfault", Verdict.CRASH), ("memory_bomb", Verdict.OUT_OF_MEMORY)])
def test_the_pool_recovers_after_a_fault(env, name, verdict):
    problem = small_problem("vector_add")
    config = EvalConfig(device=DEVICE, trials=2, memory_limit_mb=3000, static_checks=False)
    assert env.submit(problem, candidate(name), config).result().verdict is verdict
    assert env.submit(problem, CORRECT, CONFIG).result().verdict is Verdict.OK


def test_per_task_timeout_overrides_the_config(env):
    start = time.monotonic()
    result = env.submit(small_problem("vector_add"), candidate("hangs"), CONFIG, timeout_s=2).result()
    assert result.verdict is Verdict.TIMEOUT and "2 s" in result.feedback
    assert time.monotonic() - start < 2 + BACKSTOP_S / 2  # the judge ended it, not the pool's backstop


def test_higher_priority_runs_first(env):
    problem = small_problem("vector_add")
    blocker = env.submit(problem, candidate("hangs"), CONFIG, timeout_s=2)
    time.sleep(0.5)  # the blocker now occupies the only sandbox
    finished: list[str] = []
    low = env.submit(problem, CORRECT, CONFIG, priority=0)
    high = env.submit(problem, CORRECT, CONFIG, priority=10)
    low.add_done_callback(lambda _: finished.append("low"))
    high.add_done_callback(lambda _: finished.append("high"))
    assert blocker.result().verdict is Verdict.TIMEOUT
    low.result(), high.result()
    assert finished == ["high", "low"]


def test_evaluate_batch_returns_results_in_input_order(env):
    problem = small_problem("vector_add")
    sources = [candidate("mismatch"), CORRECT, candidate("mismatch"), CORRECT]
    # Priorities reorder execution (9 first, then 5, 1, 0); the results still follow the input.
    tasks = [Task(problem, s, str(i), priority=p) for i, (s, p) in enumerate(zip(sources, [0, 5, 1, 9], strict=True))]
    results = env.evaluate_batch(tasks, CONFIG)
    assert [r.verdict for r in results] == [Verdict.MISMATCH, Verdict.OK, Verdict.MISMATCH, Verdict.OK]
    assert env.evaluate_batch([], CONFIG) == []


def test_a_judge_killed_from_outside_before_the_candidate_ran_is_retried_and_nothing_is_lost(env):
    pid_file, starts = Path(tempfile.mkdtemp()) / "pids", env.sandbox_starts[0]
    slow = Problem(name="slow_reference", source=small_problem("vector_add").source.replace(
        "def get_inputs():", f"def get_inputs():\n    open({str(pid_file)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "    time.sleep(2)").replace("import torch", "import os\nimport time\n\nimport torch", 1))  # fmt: skip
    future = env.submit(slow, CORRECT, CONFIG)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)  # the judge, computing the reference
    result = future.result(timeout=120)
    assert result.verdict is Verdict.OK, result.feedback
    assert len(set(pid_file.read_text().split())) == 2  # the second attempt ran in a fresh judge
    assert env.sandbox_starts == [starts + 1]


def test_a_runner_that_kills_itself_is_the_candidates_crash_not_a_lost_task(env):
    kills_itself = CORRECT.replace(
        "class ModelNew(nn.Module):",
        "import os, signal\n\nos.kill(os.getpid(), signal.SIGKILL)\n\nclass ModelNew(nn.Module):",
    )
    starts = env.sandbox_starts[0]
    result = env.submit(small_problem("vector_add"), kills_itself, RUNTIME_CONFIG).result()
    assert result.verdict is Verdict.CRASH and "during import (signal SIGKILL)" in result.feedback
    assert env.sandbox_starts == [starts]


def test_a_task_lost_every_time_becomes_an_infrastructure_error():
    from tritongym.evaluate.evaluator import evaluate_in
    from tritongym.evaluate.sandbox import SandboxOutcome

    class LosesEveryJob:
        device, alive, info, runs = "cpu", True, {}, 0

        def run(self, *args):
            self.runs += 1
            return SandboxOutcome(stage="reference", stages_seen=["reference"], returncode=-9)

    sandbox = LosesEveryJob()
    result = evaluate_in(sandbox, small_problem("vector_add"), CORRECT, CONFIG, attempts=2)
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and "lost 2 times" in result.feedback
    assert sandbox.runs == 2


def test_many_concurrent_submitters_get_exactly_one_result_each():
    problem = small_problem("vector_add")
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=2)) as env:
        futures, lock = [], threading.Lock()

        def client(i):
            for j in range(5):
                source = CORRECT if (i + j) % 3 else candidate("mismatch")
                f = env.submit(problem, source, CONFIG)
                with lock:
                    futures.append((source == CORRECT, f))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(futures) == 20
        for correct, f in futures:
            assert f.result(timeout=120).verdict is (Verdict.OK if correct else Verdict.MISMATCH)


def test_close_finishes_queued_tasks():
    problem = small_problem("vector_add")
    env = LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1))
    futures = [env.submit(problem, CORRECT, CONFIG) for _ in range(3)]
    env.close()
    assert all(f.done() and f.result().verdict is Verdict.OK for f in futures)
