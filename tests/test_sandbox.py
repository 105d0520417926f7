"""The caller survives whatever the candidate does, and the candidate sees nothing of the caller."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import DEVICE, PROCESSES_REFUSED, assert_fork_refused, run_candidate, small_problem
from tritongym.evaluate import Verdict, sandbox
from tritongym.evaluate.sandbox import BACKSTOP_S, group_rss_bytes


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


TIMEOUT_S = 3.0
"""Long enough for a warm judge to reach the candidate's first trial (a tenth of a second unloaded)."""


def test_infinite_loop_in_forward_is_a_timeout(warm_env):
    result = run_candidate("hangs", env=warm_env, timeout_s=TIMEOUT_S)
    assert result.verdict is Verdict.TIMEOUT
    assert "during trial 1" in result.feedback
    assert result.compiled is True
    # The judge ends the runner at the deadline, long before the pool's backstop would end the judge.
    assert result.stage_seconds["sandbox_wall"] < TIMEOUT_S + BACKSTOP_S / 2


def test_a_job_reports_how_its_runners_start_went_part_by_part(warm_env):
    stages = run_candidate("correct", env=warm_env).stage_seconds
    parts = [stages[f"runner_start_{part}"] for part in ("serve", "warm", "hardened")]  # no CUDA context here
    assert "runner_start_context" not in stages and all(part >= 0 for part in parts)
    assert stages["runner_start"] == pytest.approx(sum(parts), abs=1e-3)
    assert 0 <= stages["runner_wait"] <= stages["import"]
    assert 0 < stages["runner_end"] < stages["total"] - stages["correctness"]  # after the job's stages


def test_infinite_loop_at_import_is_a_timeout_before_compilation(warm_env):
    result = run_candidate("hangs_at_import", env=warm_env, timeout_s=TIMEOUT_S)
    assert result.verdict is Verdict.TIMEOUT
    assert "during import" in result.feedback
    assert result.compiled is False


def test_unbounded_allocation_is_out_of_memory(warm_env):
    result = run_candidate("memory_bomb", env=warm_env, memory_limit_mb=3000)
    assert result.verdict is Verdict.OUT_OF_MEMORY, result.feedback


def test_group_rss_counts_a_process_in_the_group():
    code = "import os, time; x = b'x' * (200 << 20); print('ready', flush=True); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        assert group_rss_bytes(proc.pid) > 200 << 20
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("candidate", ["forks", "fork_continues"])
def test_forked_children_do_not_outlive_or_speak_for_the_evaluation(warm_env, candidate):
    result = run_candidate(candidate, env=warm_env, static_checks=False)
    if PROCESSES_REFUSED:  # a runner makes no child at all (red team 4 #7): nothing to outlive it
        assert_fork_refused(result)
        assert "forked child" not in result.stdout, result.stdout
        return
    assert result.verdict is Verdict.HACK_THREADS, result.feedback
    assert "child processes still running" in result.feedback
    pids = [int(p) for p in re.findall(r"forked child (\d+)", result.stdout)]
    assert pids, result.stdout
    time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids)


def test_output_flood_is_capped_and_drained(warm_env):
    result = run_candidate("floods_output", env=warm_env)
    assert result.verdict is Verdict.OK
    for stream in (result.stdout, result.stderr):
        assert len(stream) < 20_000
        assert "more bytes dropped" in stream


def test_files_are_written_in_a_private_directory_that_is_removed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_candidate("writes_files", static_checks=False)
    assert result.verdict is Verdict.OK
    written = Path(result.stdout.split()[1])
    assert written.parent != tmp_path and not written.exists() and not written.parent.exists()
    assert not (tmp_path / "left_behind.txt").exists()


def test_candidate_does_not_see_the_callers_environment(monkeypatch):
    monkeypatch.setenv("TRITONGYM_TEST_SECRET", "hunter2-token")
    result = run_candidate("reads_environment", static_checks=False)
    assert result.verdict is Verdict.OK
    assert "ENV" in result.stdout
    assert "hunter2-token" not in result.stdout and "TRITONGYM_TEST_SECRET" not in result.stdout
    assert ("TRITON_INTERPRET" in result.stdout) is (DEVICE == "cpu")


def test_caller_process_is_unharmed_after_a_crash(warm_env):
    before = os.getpid()
    assert run_candidate("segfault", env=warm_env, static_checks=False).verdict is Verdict.CRASH
    assert os.getpid() == before and run_candidate("correct", env=warm_env).verdict is Verdict.OK


SELF_TEST_AGREES = """
import importlib.util, torch
from tritongym.evaluate.selftest import interpreter_problem
from tritongym.problems import find_problem
spec = importlib.util.spec_from_file_location("row_sum", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
try:
    x = torch.randn(4, 300)
    works = torch.allclose(module.ModelNew()(x), x.sum(dim=1), atol=1e-4)
except Exception:
    works = False
print(interpreter_problem() is None, works)
"""


def test_the_interpreter_self_test_agrees_with_a_real_looping_kernel(tmp_path):
    solution = tmp_path / "row_sum.py"
    solution.write_text(small_problem("row_sum").solution)
    code = SELF_TEST_AGREES.format(path=str(solution))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "TRITON_INTERPRET": "1"}, check=True)  # fmt: skip
    self_test_ok, kernel_works = out.stdout.split()
    assert self_test_ok == kernel_works, out.stderr


def test_an_unusable_sandbox_gives_infrastructure_errors_without_running_anything():
    from tritongym.evaluate import EvalConfig
    from tritongym.evaluate.evaluator import evaluate_in

    class BrokenInterpreter:
        device, alive = "cpu", True

        def __init__(self):
            self.info = {"unusable": "Triton 3.6's interpreter fails with numpy 2.5"}

        def run(self, *args):
            raise AssertionError("must not run a job")

    result = evaluate_in(BrokenInterpreter(), small_problem("vector_add"), "x = 1\n", EvalConfig(device="cpu"))
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "cannot evaluate on cpu: Triton 3.6's interpreter fails" in result.feedback


def test_runners_of_their_own_user_are_refused_on_a_gpu(monkeypatch):
    """CUDA's inter-process handles do not open across users: say so before starting anything."""
    from tritongym.errors import ConfigError
    from tritongym.evaluate.sandbox import Sandbox

    monkeypatch.setenv("TRITONGYM_RUNNER_USER", "own")
    with pytest.raises(ConfigError, match="CPU only"):
        Sandbox("cuda")


def test_the_home_of_a_killed_pool_is_swept_by_the_next_and_no_other(tmp_path, monkeypatch):
    """A pool killed with SIGKILL cannot remove its sandbox's home (its candidates' files with it):
    the next sandbox started on the machine removes it, and neither a live process's home nor one
    without an owner."""
    monkeypatch.setattr(sandbox.tempfile, "tempdir", str(tmp_path))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    code = (
        "import time\nfrom tritongym.evaluate.sandbox import Sandbox\n"
        "s = Sandbox('cpu'); s.start(); print(s._home, flush=True); time.sleep(600)"
    )
    pool = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    killed = Path(pool.stdout.readline().strip())
    live = tmp_path / (sandbox.HOME_PREFIX + "live")
    ownerless = tmp_path / (sandbox.HOME_PREFIX + "ownerless")
    live.mkdir()
    ownerless.mkdir()
    (live / sandbox.OWNER).write_text(sandbox.process_identity(os.getpid()))
    assert killed.parent == tmp_path and sandbox.stale_homes(tmp_path) == []
    pool.kill()
    pool.wait()
    assert sandbox.stale_homes(tmp_path) == [killed]
    assert sandbox.sweep_stale_homes(tmp_path) == 1
    assert not killed.exists() and live.exists() and ownerless.exists()


def test_the_pools_watch_moves_with_the_time_the_judge_gave_back_by_the_allowance_at_most():
    """An ``extend_s`` message (judge.JobState.extend) moves the watch's deadline, up to its allowance:
    a judge that says more is still stopped."""
    import json
    import threading
    import types

    def watch(allowance_s: float, extend_s) -> sandbox.SandboxOutcome:
        read, write = os.pipe()
        box = types.SimpleNamespace(_channel=read, _proc=types.SimpleNamespace(pid=os.getpid()))
        outcome = sandbox.SandboxOutcome(judge_exposed=False)
        os.write(write, (json.dumps({"extend_s": extend_s, "nonce": "n"}) + "\n").encode())
        result = (json.dumps({"result": {"verdict": "ok"}, "nonce": "n"}) + "\n").encode()
        threading.Timer(0.6, os.write, (write, result)).start()
        try:
            sandbox.Sandbox._watch(box, outcome, time.monotonic() + 0.3, 1 << 50, "result", "n", allowance_s)
        finally:
            time.sleep(0.7)
            os.close(read)
            os.close(write)
        return outcome

    assert watch(allowance_s=5.0, extend_s=2.0).result == {"verdict": "ok"}
    assert watch(allowance_s=0.1, extend_s=2.0).timed_out
    assert watch(allowance_s=5.0, extend_s=float("nan")).timed_out
