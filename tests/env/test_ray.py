"""The Ray backend on a local cluster with CPU workers: results, and an actor killed mid-task."""

import tempfile
import time
from pathlib import Path

import pytest

from helpers import CANDIDATES, small_problem
from tritongym.env import Task
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import Problem

ray = pytest.importorskip("ray")
from tritongym.env.ray_backend import RayEnv  # noqa: E402

PROBLEM = small_problem("vector_add")
CORRECT = (CANDIDATES / "correct.py").read_text()
MISMATCH = (CANDIDATES / "mismatch.py").read_text()
CONFIG = EvalConfig(trials=2)


@pytest.fixture(scope="module")
def env():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with RayEnv(devices="cpu", num_workers=2) as pool:
            yield pool
    finally:
        ray.shutdown()


def test_results_stream_back_from_actors(env):
    tasks = [Task(PROBLEM, CORRECT if i % 2 else MISMATCH, str(i), priority=i) for i in range(6)]
    results = {t.label: r.verdict for t, r in env.evaluate_many(tasks, CONFIG)}
    assert results == {str(i): Verdict.OK if i % 2 else Verdict.MISMATCH for i in range(6)}
    assert env.fingerprint()["versions"]["torch"] and env.slots == 2
    ordered = env.evaluate_batch([Task(PROBLEM, MISMATCH), Task(PROBLEM, CORRECT), Task(PROBLEM, MISMATCH)], CONFIG)
    assert [r.verdict for r in ordered] == [Verdict.MISMATCH, Verdict.OK, Verdict.MISMATCH]


def test_an_actor_killed_mid_task_is_restarted_and_the_task_retried(env):
    marker = Path(tempfile.mkdtemp()) / "started"
    marker.touch()
    slow = Problem(  # each judge that starts the task says so (a runner may write only in its job's directory)
        name="slow_vector_add",
        source=PROBLEM.source.replace(
            "def get_init_inputs():", f"def get_init_inputs():\n    open({str(marker)!r}, 'a').write('x')\n"
            "    time.sleep(1.5)").replace("import torch", "import time\n\nimport torch", 1),
    )  # fmt: skip
    futures = [env.submit(slow, CORRECT, CONFIG) for _ in range(2)]  # one on each actor
    deadline = time.monotonic() + 60
    while (not marker.exists() or len(marker.read_text()) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    ray.kill(env.actors[0], no_restart=False)
    assert [f.result(timeout=120).verdict for f in futures] == [Verdict.OK, Verdict.OK]
    assert len(marker.read_text()) == 3  # the killed actor's task ran again
    assert env.submit(PROBLEM, CORRECT, CONFIG).result(timeout=60).verdict is Verdict.OK
