"""The red team's breaks of the judge/runner split (candidates in redteam/, table in its README),
each with the verdict it deserves; the cross-job ones in one warm pool, where the victims after
the attacker must get their solo verdicts and nothing of the attack may remain."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers import CANDIDATES, DEVICE, PROCESSES_REFUSED, assert_fork_refused, small_problem
from tritongym.env.client import HttpEnv
from tritongym.env.service import SafeJSONResponse
from tritongym.errors import SandboxError, ServiceError
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.evaluate.judge.reaping import PID_RANGE, children, kill_trees, kill_user, runner_uids, user_processes
from tritongym.evaluate.judge.runners import RunnerSupply
from tritongym.evaluate.sandbox import BACKSTOP_S, overrides_permissions, private_lock_dir
from tritongym.problems import find_problem

REDTEAM = Path(__file__).parent / "redteam"
ROOT = os.geteuid() == 0
CORRECT = (CANDIDATES / "correct.py").read_text()
WRONG = (CANDIDATES / "mismatch.py").read_text()


def source(name: str) -> str:
    return (REDTEAM / f"{name}.py").read_text()


def config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, **({"trials": 2, "timing_budget_s": 2.0} | overrides))


DEEP_MINUS = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n" + (
    "        return a + b\n\n\ndef never_called():\n    return " + "-" * 10_000 + "1\n"
)


@pytest.mark.parametrize("text", [source("deep_expression_drops_sample"), DEEP_MINUS], ids=["plus", "minus"])
@pytest.mark.parametrize("static", [True, False])
def test_a_text_too_deep_to_compile_is_the_candidates_verdict(judge, text, static):
    result = judge(small_problem("vector_add"), text, config(static_checks=static))
    assert result.verdict is Verdict.INVALID_SOURCE, result.feedback + result.detail
    assert "nested too deeply" in result.feedback


@pytest.fixture
def pool(warm_env):
    """The session's warm sandbox, and how many judges it had started before the test."""
    return warm_env, warm_env.sandbox_starts


def runner_processes(pool) -> list[int]:
    """Live processes of the pool's judge's runner users (root judge) or of its zygote's tree."""
    judge = pool._sandboxes[0].pid
    if ROOT:
        return sorted({pid for uid in runner_uids(judge) for pid in user_processes(uid)})
    return [pid for zygote in children(judge) for pid in children(zygote)]


CROSS_JOB = ["kills_spare_runner", "stops_spare_runner", "immortal_chain"]


@pytest.mark.parametrize("attacker", CROSS_JOB)
def test_an_attacker_cannot_reach_the_next_jobs_runner(pool, attacker):
    if attacker == "immortal_chain" and not ROOT:
        pytest.skip("without root, a process that left the runner's tree is found only by the zygote's sweep")
    pool, starts = pool
    problem = small_problem("vector_add")
    attack = pool.submit(problem, source(attacker), config(static_checks=False)).result()
    if attacker == "immortal_chain" and PROCESSES_REFUSED:  # a runner: its first fork fails, no chain
        assert_fork_refused(attack)
    else:
        assert attack.verdict is Verdict.OK, attack.feedback + attack.stderr
    if ROOT and attacker != "immortal_chain":  # the spare runs as another user: nothing to signal
        assert ("KILLED []" if attacker == "kills_spare_runner" else "STOPPED []") in attack.stdout, attack.stdout
    left = runner_processes(pool)
    assert len(left) <= 1, f"processes of the attack remain: {left}"  # the spare for the next job, at most
    honest = pool.submit(problem, CORRECT, config()).result()
    wrong = pool.submit(problem, WRONG, config()).result()
    assert honest.verdict is Verdict.OK, honest.feedback
    assert wrong.verdict is Verdict.MISMATCH, wrong.feedback
    assert pool.sandbox_starts == starts  # the judge itself was never hurt
    assert len(runner_processes(pool)) <= 1


def test_runner_users_alternate_and_are_nobodys_own():
    first, second = runner_uids(1234)
    assert second == first + 1 and runner_uids(1235)[0] == second + 1
    assert first > 65534 and runner_uids(PID_RANGE - 1)[1] < 2**31


def spawn_forking_sessions(uid: int, count: int) -> None:
    """Chains of processes of ``uid``, each in a session of its own and out of our tree, whose
    tail keeps forking a new member (forked, not executed: the user needs no file to read)."""
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.setgid(uid)
                os.setuid(uid)
                if os.fork():
                    os._exit(0)  # the rest is an orphan
                deadline, depth = time.monotonic() + 30, 0
                while time.monotonic() < deadline:
                    if depth < 4:  # each member forks the next one once
                        if os.fork() == 0:
                            depth += 1
                            os.setsid()
                            continue
                        depth = 4
                    time.sleep(0.05)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


@pytest.mark.skipif(not ROOT, reason="killing by user needs root")
def test_killing_a_user_reaches_every_session_and_fork():
    uid = runner_uids(os.getpid())[0]
    spawn_forking_sessions(uid, 3)
    time.sleep(0.3)
    assert user_processes(uid)
    assert kill_user(uid)
    assert user_processes(uid) == []


def test_a_stopped_tree_is_killed_whole():
    script = "import os, time\nif os.fork() == 0:\n    os.fork()\ntime.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", script])
    time.sleep(0.5)
    tree = [proc.pid, *children(proc.pid)]
    tree += [c for pid in tree[1:] for c in children(pid)]
    assert len(tree) == 3
    kill_trees([proc.pid])
    proc.wait()
    time.sleep(0.2)
    for pid in tree[1:]:
        state = (
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if Path(f"/proc/{pid}").exists()
            else "gone"
        )
        assert state in ("Z", "gone"), state


def test_a_runner_that_stops_reading_times_out_and_the_judge_stays(pool):
    (pool, starts), timeout_s = pool, 8.0
    # A quarter of the full size: its inputs (2 x 16 MiB) still overflow a socket buffer, and the judge's
    # reference (part of the timeout) takes a quarter of the time.
    problem = find_problem("vector_add").with_sizes(n=1 << 22)
    started = time.monotonic()
    attack = pool.submit(
        problem, source("stops_reading_judge_socket"), config(static_checks=False, timeout_s=timeout_s)
    ).result()
    assert attack.verdict is Verdict.TIMEOUT, attack.feedback
    assert "during trial 1" in attack.feedback
    assert time.monotonic() - started < timeout_s + BACKSTOP_S / 2  # the job's own timeout, not the pool's backstop
    honest = pool.submit(small_problem("vector_add"), CORRECT, config()).result()
    assert honest.verdict is Verdict.OK, honest.feedback
    assert pool.sandbox_starts == starts


def test_feedback_that_cannot_encode_is_served_cleaned(judge):
    result = judge(small_problem("vector_add"), source("surrogate_feedback_breaks_service"), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "bad ? ??????????" in result.feedback
    result.to_json().encode("utf-8")
    assert json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")


def test_the_service_encodes_any_result():
    body = SafeJSONResponse({"feedback": "bad \ud800", "errors": {"max_abs_error": float("nan"), "n": [float("inf")]}})
    assert json.loads(body.body) == {"feedback": "bad ?", "errors": {"max_abs_error": None, "n": [None]}}


def test_a_task_the_service_cannot_answer_fails_alone():
    done = {"id": "good", "state": "done", "result": EvalResult(problem="p", verdict=Verdict.OK, feedback="").to_dict()}

    def serve(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/tasks":
            return httpx.Response(202, json={"ids": ["good", "bad"]})
        if request.url.path == "/v1/tasks/good":
            return httpx.Response(200, json=done)
        return httpx.Response(500, text="Internal Server Error")  # the batch query and the bad task

    env = HttpEnv("http://service")
    env._http = httpx.Client(base_url="http://service", transport=httpx.MockTransport(serve))
    with env:
        good, bad = env._post_tasks([{}, {}])
        assert good.result(timeout=10).verdict is Verdict.OK
        with pytest.raises(ServiceError, match="task bad"):
            bad.result(timeout=10)


@pytest.mark.parametrize("torch_compute", ["allow", "forbid"])
def test_output_computed_outside_triton_is_no_triton(judge, torch_compute):
    result = judge(small_problem("softmax"), source("numpy_does_the_work"), config(torch_compute=torch_compute))
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback + result.detail
    # under forbid its copy of the input to the host decides first (red team 14 #2)
    hollow = "none of the solution's Triton kernels ran"
    why = "bytes of device memory to the host" if torch_compute == "forbid" else hollow
    assert why in result.feedback


def test_a_text_without_a_triton_kernel_is_refused_whatever_its_runner_would_report(judge):
    result = judge(small_problem("softmax"), source("forges_guard_report_no_triton"), config(torch_compute="forbid"))
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback + result.detail
    assert "defines no Triton kernel" in result.feedback
    assert "correctness" not in result.stage_seconds  # it never reached a runner


@pytest.mark.skipif(DEVICE != "cpu", reason="on a GPU its profiled forward gives it away (test_gpu_exploits.py)")
def test_a_decoy_kernel_and_a_forged_guard_report_still_pass_on_the_cpu(judge):
    """The limit that remains (docs/environment.md, threat model): with a kernel in its text that it
    never launches, a candidate that replaces the runner's launch monitor and op recorder passes the
    trials, the fallback check and the hollow forward, which are the runner's word. Its output is
    still the judge's to check."""
    decoy = source("forges_guard_report_decoy_kernel")
    result = judge(small_problem("softmax"), decoy, config(torch_compute="forbid"))
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    wrong = decoy.replace("torch.softmax(x, dim=1)", "torch.softmax(x, dim=0)")
    assert judge(small_problem("softmax"), wrong, config()).verdict is Verdict.MISMATCH


def test_the_gpu_lock_lives_where_only_the_judges_user_writes(tmp_path):
    path = private_lock_dir(tmp_path)
    mode = 0 if ROOT and overrides_permissions() else 0o700  # red team 5 #2: no runner of uid 0 opens a lock
    assert path == private_lock_dir(tmp_path) and (os.stat(path).st_mode & 0o777) == mode
    path.chmod(0o1777)  # as a runner would have made it, had it come first
    with pytest.raises(SandboxError, match="only this user may write"):
        private_lock_dir(tmp_path)
    if ROOT:
        path.chmod(0o700)
        os.chown(path, 12345, 12345)
        with pytest.raises(SandboxError, match="only this user may write"):
            private_lock_dir(tmp_path)


@pytest.mark.parametrize("after_hello", [False, True], ids=["before-hello", "after-hello"])
def test_a_stopped_spare_is_replaced_not_given_the_job(monkeypatch, tmp_path, after_hello):
    monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")  # no users of their own: the ping must catch it
    env = dict(os.environ) | {"TRITON_INTERPRET": "1", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    supply = RunnerSupply("cpu", env, str(tmp_path), tmp_path)
    try:
        supply.launch()
        supply.start()
        stopped = supply.spare
        if after_hello:  # its Hello is waiting on the socket
            assert select.select([stopped.sock], [], [], 60)[0]
        os.kill(stopped.pid, signal.SIGSTOP)
        runner = supply.take(time.monotonic() + 60)
        assert runner.pid != stopped.pid and supply.forks == 2
        runner.ping(5.0)
        runner.kill()
    finally:
        supply.close()
