"""The HTTP service in-process: results, cache, bad requests, auth, metrics, export."""

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from helpers import CANDIDATES, small_problem
from tritongym.env.service import ServiceConfig, create_app
from tritongym.env.store import TaskStore

PROBLEM = small_problem("vector_add")
CORRECT = (CANDIDATES / "correct.py").read_text()
MISMATCH = (CANDIDATES / "mismatch.py").read_text()


def task(candidate=CORRECT, **extra):
    problem = {"name": PROBLEM.name, "source": PROBLEM.source, "entry_point": PROBLEM.entry_point}
    return {"problem": problem, "candidate": candidate, "config": {"trials": 2}} | extra


@pytest.fixture
def pool(warm_env):
    """The session's warm sandbox (the service does not own its pool: it leaves it running)."""
    return warm_env


def make_client(pool, tmp_path, **config):
    store = TaskStore(tmp_path / "tasks.db")
    return TestClient(create_app(pool, store, ServiceConfig(**config))), store


def wait_done(client, task_id, headers=None):
    body = client.get(f"/v1/tasks/{task_id}", params={"wait": 30}, headers=headers).json()
    assert body["state"] == "done", body
    return body


def test_submit_long_poll_and_batch_query(pool, tmp_path):
    client, _ = make_client(pool, tmp_path)
    with client:
        response = client.post("/v1/tasks", json={"tasks": [task(), task(MISMATCH)]})
        assert response.status_code == 202
        ok_id, bad_id = response.json()["ids"]
        assert wait_done(client, ok_id)["result"]["verdict"] == "ok"
        body = client.post("/v1/tasks/query", json={"ids": [ok_id, bad_id], "wait": 30}).json()
        states = {t["id"]: t for t in body["tasks"]}
        wait_done(client, bad_id)
        assert states[ok_id]["result"]["verdict"] == "ok"


SYNTAX_ERROR = (CANDIDATES / "syntax_error.py").read_text()


def test_identical_task_is_answered_from_cache_unless_fresh(pool, tmp_path):
    """What the text alone decides (a syntax error) is served again; a run of the code is not (its
    verdict is one draw of the secret inputs: red team 5 #5)."""
    client, _ = make_client(pool, tmp_path)
    with client:
        (first,) = client.post("/v1/tasks", json={"tasks": [task(SYNTAX_ERROR)]}).json()["ids"]
        original = wait_done(client, first)
        assert original["result"]["verdict"] == "syntax_error"
        (again,) = client.post("/v1/tasks", json={"tasks": [task(SYNTAX_ERROR)]}).json()["ids"]
        cached = client.get(f"/v1/tasks/{again}").json()
        assert cached["state"] == "done" and cached["cached"] is True
        assert cached["result"] == original["result"]
        (fresh,) = client.post("/v1/tasks", json={"tasks": [task(SYNTAX_ERROR, fresh=True)]}).json()["ids"]
        assert wait_done(client, fresh)["cached"] is False
        (other,) = client.post("/v1/tasks", json={"tasks": [task(SYNTAX_ERROR, config={"trials": 3})]}).json()["ids"]
        assert wait_done(client, other)["cached"] is False


@pytest.mark.parametrize(
    ("request_kwargs", "code", "phrase"),
    [
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 422, "JSON decode error"),
        ({"json": {"tasks": []}}, 422, "at least 1"),
        ({"json": {"tasks": [{"problem": "softmax", "candidate": "x"}]}}, 422, "problem"),
        ({"json": {"tasks": [task(priority="high")]}}, 422, "priority"),
        ({"json": {"tasks": [task(config={"trials": 0})]}}, 422, "trials must be at least 1"),
        ({"json": {"tasks": [task(config={"speed": "max"})]}}, 422, "unknown config fields"),
        ({"json": {"tasks": [task(config={"device": "cuda"})]}}, 422, "unknown config fields"),
        ({"json": {"tasks": [task(candidate="x" * 3_000_000)]}}, 413, "request body over"),
    ],
    ids=["malformed", "empty", "wrong-type", "bad-priority", "bad-config", "unknown-config", "device", "oversized"],
)
def test_bad_requests_are_rejected_clearly_and_the_service_keeps_serving(pool, tmp_path, request_kwargs, code, phrase):
    client, _ = make_client(pool, tmp_path, max_body_bytes=2 << 20)
    with client:
        response = client.post("/v1/tasks", **request_kwargs)
        assert response.status_code == code
        assert phrase in json.dumps(response.json())
        assert client.get("/healthz").json()["status"] == "ok"
        (task_id,) = client.post("/v1/tasks", json={"tasks": [task()]}).json()["ids"]
        assert wait_done(client, task_id)["result"]["verdict"] == "ok"


def test_unknown_ids_and_bad_waits(pool, tmp_path):
    client, _ = make_client(pool, tmp_path)
    with client:
        assert client.get("/v1/tasks/nope").status_code == 404
        assert "unknown task ids" in client.post("/v1/tasks/query", json={"ids": ["nope"]}).json()["detail"]
        assert client.get("/v1/tasks/nope", params={"wait": 1000}).status_code == 422


def test_bearer_token(pool, tmp_path):
    client, _ = make_client(pool, tmp_path, token="s3cret")
    with client:
        assert client.post("/v1/tasks", json={"tasks": [task()]}).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert client.post("/v1/tasks", json={"tasks": [task()]}, headers=wrong).status_code == 401
        assert client.get("/metrics").status_code == 401
        good = {"Authorization": "Bearer s3cret"}
        response = client.post("/v1/tasks", json={"tasks": [task()]}, headers=good)
        assert response.status_code == 202
        wait_done(client, response.json()["ids"][0], headers=good)
        assert client.get("/healthz").status_code == 200


def test_metrics_export_and_openapi(pool, tmp_path):
    client, store = make_client(pool, tmp_path)
    with client:
        ids = client.post("/v1/tasks", json={"tasks": [task(), task(MISMATCH)]}).json()["ids"]
        for task_id in ids:
            wait_done(client, task_id)
        text = client.get("/metrics").text
        assert 'tritongym_tasks_completed_total{verdict="ok"} 1.0' in text
        assert 'tritongym_tasks_completed_total{verdict="mismatch"} 1.0' in text
        assert "tritongym_tasks_submitted_total 2.0" in text
        lines = client.get("/v1/results.jsonl").text.splitlines()
        assert sorted(json.loads(line)["id"] for line in lines) == sorted(ids)
        paths = client.get("/openapi.json").json()["paths"]
        assert {"/v1/tasks", "/v1/tasks/{task_id}", "/v1/tasks/query", "/healthz", "/metrics"} <= set(paths)
        assert store.counts() == {"queued": 0, "running": 0, "done": 2}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_api_pages_load_their_assets_from_the_service(pool, tmp_path, page):
    """Air-gapped clusters: every script and stylesheet of the API pages is served locally."""
    client, _ = make_client(pool, tmp_path)
    with client:
        html = client.get(page).text
        assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', html)
        assert assets and all(a.startswith("/docs-assets/") for a in assets), assets
        assert "cdn" not in html and "fonts.googleapis" not in html
        for asset in assets:
            response = client.get(asset)
            assert response.status_code == 200 and len(response.content) > 10_000, asset


def test_a_shrunk_problem_sent_to_the_service_keeps_its_second_size(pool, tmp_path):
    """``Problem.to_dict`` carries what was shrunk, and the service's judge runs its second size: a
    kernel sized for the one shrunk size fails there, as through a local pool."""
    sized = (Path(__file__).parents[1] / "adversarial" / "cpusize" / "one_program_block.py").read_text()
    client, _ = make_client(pool, tmp_path)
    with client:
        sent = {"problem": PROBLEM.to_dict(), "candidate": sized, "config": {"trials": 2}}
        (task_id,) = client.post("/v1/tasks", json={"tasks": [sent]}).json()["ids"]
        result = wait_done(client, task_id)["result"]
        assert result["verdict"] == "mismatch", result["feedback"]
        assert re.search(r"other sizes than the problem shows: n 1000->\d+", result["feedback"])
