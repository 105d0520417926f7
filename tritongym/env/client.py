"""HttpEnv: the Env API over a running ``tritongym serve`` (futures resolved by long-polling)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, as_completed
from dataclasses import asdict

import httpx

from tritongym.env.base import Task, task_config
from tritongym.errors import ConfigError, ServiceError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult
from tritongym.problems import Problem

log = logging.getLogger(__name__)


def _task_json(problem: Problem, candidate: str | bytes, config: EvalConfig | None, priority: int, fresh: bool):
    text = candidate.decode("utf-8", errors="replace") if isinstance(candidate, bytes) else candidate
    settings = asdict(config) if config else {}
    settings.pop("device", None)  # the service's devices decide
    return {
        "problem": problem.to_dict(),
        "candidate": text,
        "config": settings,
        "priority": priority,
        "fresh": fresh,
    }


class HttpEnv:
    """Client of a tritongym service. ``fresh=True`` bypasses the service's result cache."""

    def __init__(self, url: str, token: str | None = None, *, fresh: bool = False, poll_wait_s: float = 20.0):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=poll_wait_s + 30)
        self.fresh, self.poll_wait_s = fresh, poll_wait_s
        self._pending: dict[str, Future[EvalResult]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._submitted = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="tritongym-http-poller", daemon=True)
        self._poller.start()

    def _post(self, path: str, body: dict) -> dict:
        """POST to the service; its refusals become the project's errors, each saying what to do."""
        return self._checked(self._send(path, body))

    def _send(self, path: str, body: dict | None = None) -> httpx.Response:
        """POST ``body`` (GET without one); an unreachable service is a ServiceError saying what to do."""
        try:
            return self._http.post(path, json=body) if body is not None else self._http.get(path)
        except httpx.TransportError as exc:
            raise ServiceError(
                f"cannot reach the tritongym service at {self._http.base_url} ({exc}): start it with "
                "`tritongym serve`, or check the URL and port"
            ) from exc

    def _checked(self, response: httpx.Response) -> dict:
        """The answer's JSON, or the project's error for a refusal, saying what to do."""
        url = str(response.request.url)
        if response.is_success:
            return response.json()
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        if response.status_code == 401:
            raise ServiceError(
                f"{url} refused the bearer token: pass the token the service was started with "
                "(its $TRITONGYM_TOKEN) as HttpEnv(url, token=...)"
            )
        if response.status_code == 413:
            raise ServiceError(f"{url}: {detail}; pass a smaller batch= to evaluate_many/evaluate_batch")
        if response.status_code == 422:
            raise ConfigError(f"{url} refused the request: {detail}")
        raise ServiceError(f"{url} answered {response.status_code}: {detail}; see the service's log")

    def _post_tasks(self, tasks: list[dict]) -> list[Future[EvalResult]]:
        ids = self._post("/v1/tasks", {"tasks": tasks})["ids"]
        futures = []
        with self._lock:
            for task_id in ids:
                futures.append(self._pending.setdefault(task_id, Future()))
        self._submitted.set()
        return futures

    def submit(
        self,
        problem: Problem,
        candidate: str | bytes,
        config: EvalConfig | None = None,
        *,
        priority: int = 0,
        timeout_s: float | None = None,
    ) -> Future[EvalResult]:
        config = task_config(config, timeout_s)
        return self._post_tasks([_task_json(problem, candidate, config, priority, self.fresh)])[0]

    def _submit_all(self, tasks: list[Task], config: EvalConfig | None, batch: int) -> list[Future[EvalResult]]:
        """Post the tasks ``batch`` per request; one future per task, in order."""
        futures: list[Future[EvalResult]] = []
        for start in range(0, len(tasks), batch):
            chunk = tasks[start : start + batch]
            payload = [_task_json(t.problem, t.candidate, config, t.priority, self.fresh) for t in chunk]
            futures.extend(self._post_tasks(payload))
        return futures

    def evaluate_many(
        self, tasks: Iterable[Task], config: EvalConfig | None = None, batch: int = 256
    ) -> Iterator[tuple[Task, EvalResult]]:
        tasks = list(tasks)
        futures = dict(zip(self._submit_all(tasks, config, batch), tasks, strict=True))
        for future in as_completed(futures):
            yield futures[future], future.result()

    def evaluate_batch(
        self, tasks: Iterable[Task], config: EvalConfig | None = None, batch: int = 256
    ) -> list[EvalResult]:
        """Evaluate every task and return the results in the tasks' order."""
        return [future.result() for future in self._submit_all(list(tasks), config, batch)]

    def _poll(self) -> None:
        backoff = 0.1
        while not self._closed.is_set():
            with self._lock:
                ids = list(self._pending)[:1000]
            if not ids:
                self._submitted.wait(0.5)
                self._submitted.clear()
                continue
            try:
                response = self._send("/v1/tasks/query", {"ids": ids, "wait": self.poll_wait_s})
                # one task the server cannot answer (5xx) must not hold up the rest
                tasks = self._one_by_one(ids) if response.status_code >= 500 else self._checked(response)["tasks"]
                backoff = 0.1
            except ServiceError as exc:
                if not isinstance(exc.__cause__, httpx.TransportError):
                    self._fail_pending(ids, exc)  # refused, not unreachable: retrying cannot help
                    continue
                log.warning("polling the service failed (%s); retrying", exc)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            for task in tasks:
                if task["state"] == "done":
                    self._resolve(task["id"], lambda f, t=task: f.set_result(EvalResult.from_dict(t["result"])))

    def _resolve(self, task_id: str, how) -> None:
        with self._lock:
            future = self._pending.pop(task_id, None)
        if future is not None:
            how(future)

    def _one_by_one(self, ids: list[str]) -> list[dict]:
        """Each id's state on its own; an id the server answers with an error (5xx) fails alone."""
        found = []
        for task_id in ids:
            response = self._send(f"/v1/tasks/{task_id}")
            if response.status_code >= 500:
                error = ServiceError(f"the service failed to answer for task {task_id} ({response.status_code})")
                self._resolve(task_id, lambda f, e=error: f.set_exception(e))
                continue
            found.append(self._checked(response))
        return found

    def _fail_pending(self, ids: list[str], exc: Exception) -> None:
        with self._lock:
            futures = [self._pending.pop(task_id) for task_id in ids if task_id in self._pending]
        for future in futures:
            future.set_exception(exc)

    def close(self) -> None:
        self._closed.set()
        self._submitted.set()
        self._poller.join()
        self._http.close()

    def __enter__(self) -> HttpEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
