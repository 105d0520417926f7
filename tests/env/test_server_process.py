"""A real `tritongym serve` process on loopback: the HTTP client, concurrent clients, and a kill -9
of the service mid-batch followed by a restart that finishes every task exactly once."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import replace

import httpx
import pytest

from helpers import CANDIDATES, small_problem
from tritongym.env import Task
from tritongym.env.client import HttpEnv
from tritongym.errors import ConfigError, ServiceError
from tritongym.evaluate import EvalConfig, Verdict

PROBLEM = small_problem("vector_add")
CORRECT = (CANDIDATES / "correct.py").read_text()
MISMATCH = (CANDIDATES / "mismatch.py").read_text()
CONFIG = EvalConfig(trials=2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(db, jobs=1, env=None, args=()):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritongym", "serve", "--port", str(port), "--db", str(db), "--devices", "cpu",
         "--jobs", str(jobs), *args],
        env={**os.environ, **(env or {})}, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"server did not start: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)
    try:
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


TOKEN = "s3cret"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One service for the tests that do not stop it: two sandboxes, a bearer token from the environment."""
    with server(tmp_path_factory.mktemp("service") / "db.sqlite", jobs=2, env={"TRITONGYM_TOKEN": TOKEN}) as (url, _):
        yield url


def test_http_env_evaluates_like_a_local_env(shared):
    with HttpEnv(shared, token=TOKEN) as env:
        tasks = [Task(PROBLEM, CORRECT, "good"), Task(PROBLEM, MISMATCH, "bad"), Task(PROBLEM, b"", "empty")]
        results = {t.label: r for t, r in env.evaluate_many(tasks, CONFIG)}
        assert results["good"].verdict is Verdict.OK
        assert results["bad"].verdict is Verdict.MISMATCH
        assert results["empty"].verdict is Verdict.INVALID_SOURCE
        assert env.submit(PROBLEM, CORRECT, CONFIG, timeout_s=30).result(timeout=60).verdict is Verdict.OK
        batch = env.evaluate_batch([Task(PROBLEM, MISMATCH), Task(PROBLEM, CORRECT), Task(PROBLEM, MISMATCH)], CONFIG)
        assert [r.verdict for r in batch] == [Verdict.MISMATCH, Verdict.OK, Verdict.MISMATCH]
        with pytest.raises(ConfigError, match="refused the request"):
            env.submit(replace(PROBLEM, entry_point="not a class"), CORRECT, CONFIG)


def test_http_env_says_what_to_do_when_the_service_is_unreachable():
    unreachable = pytest.raises(ServiceError, match=r"cannot reach the tritongym service.*`tritongym serve`")
    with HttpEnv(f"http://127.0.0.1:{free_port()}") as env, unreachable:
        env.submit(PROBLEM, CORRECT, CONFIG)


def test_concurrent_clients_all_get_correct_results(shared):
    failures, done_before = [], httpx.get(f"{shared}/healthz").json()["done"]

    def client(i):
        with HttpEnv(shared, token=TOKEN, fresh=True) as env:
            tasks = [Task(PROBLEM, CORRECT if (i + j) % 2 else MISMATCH, f"{i}-{j}") for j in range(5)]
            for t, r in env.evaluate_many(tasks, CONFIG):
                expected = Verdict.OK if t.candidate == CORRECT else Verdict.MISMATCH
                if r.verdict is not expected:
                    failures.append((t.label, r.verdict))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert failures == []
    health = httpx.get(f"{shared}/healthz").json()
    assert health["done"] == done_before + 20 and health["queued"] == health["running"] == 0


def slow(seconds: float) -> str:
    return CORRECT.replace(
        "class ModelNew(nn.Module):",
        f"import time\n\ntime.sleep({seconds})\n\nclass ModelNew(nn.Module):",
    )


def test_killed_service_resumes_every_task_exactly_once(tmp_path):
    db = tmp_path / "db.sqlite"
    problem = {"name": PROBLEM.name, "source": PROBLEM.source, "entry_point": PROBLEM.entry_point}
    tasks = [{"problem": problem, "candidate": slow(0.5) + f"\n# {i}\n", "config": {"trials": 2}} for i in range(6)]
    with server(db) as (url, proc):
        ids = httpx.post(f"{url}/v1/tasks", json={"tasks": tasks}).json()["ids"]
        deadline = time.monotonic() + 60
        while httpx.get(f"{url}/healthz").json()["done"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with server(db) as (url, _):
        body = httpx.post(f"{url}/v1/tasks/query", json={"ids": ids}).json()
        while any(t["state"] != "done" for t in body["tasks"]):
            body = httpx.post(f"{url}/v1/tasks/query", json={"ids": ids, "wait": 30}, timeout=60).json()
        assert [t["id"] for t in body["tasks"]] == ids
        assert all(t["result"]["verdict"] == "ok" for t in body["tasks"])
        assert httpx.get(f"{url}/healthz").json() | {"slots": 0, "device": ""} == {
            "status": "ok", "slots": 0, "device": "", "queued": 0, "running": 0, "done": 6,
        }  # fmt: skip
        exported = httpx.get(f"{url}/v1/results.jsonl").text.splitlines()
        assert len(exported) == 6


def test_binding_beyond_loopback_needs_a_token(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tritongym", "serve", "--host", "0.0.0.0", "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "TRITONGYM_TOKEN"},
    )  # fmt: skip
    assert result.returncode == 2
    assert "requires a bearer token" in result.stderr


def test_token_from_the_environment(shared):
    assert httpx.post(f"{shared}/v1/tasks", json={"tasks": []}).status_code == 401
    with HttpEnv(shared, token="wrong") as env, pytest.raises(ServiceError, match=r"HttpEnv\(url, token=...\)"):
        env.submit(PROBLEM, CORRECT, CONFIG)
    with HttpEnv(shared, token=TOKEN) as env:
        assert env.submit(PROBLEM, CORRECT, CONFIG).result(timeout=60).verdict is Verdict.OK


def test_service_on_the_ray_backend(tmp_path):
    pytest.importorskip("ray")
    with server(tmp_path / "db.sqlite", args=["--backend", "ray"]) as (url, _), HttpEnv(url) as env:
        assert env.submit(PROBLEM, CORRECT, CONFIG).result(timeout=120).verdict is Verdict.OK
        assert env.submit(PROBLEM, MISMATCH, CONFIG).result(timeout=120).verdict is Verdict.MISMATCH
