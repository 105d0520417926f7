"""The HTTP service (``tritongym serve``): submit one task or a batch, poll or long-poll results,
health, Prometheus metrics, JSONL export; tasks are persisted before they are acknowledged and
resumed after a restart. Install with ``pip install 'tritongym[serve]'``."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from pydantic import BaseModel, Field, field_validator

from tritongym.config_doc import documented
from tritongym.env.base import WorkerPool
from tritongym.env.store import StoredTask, TaskStore
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.evaluate.safe_json import json_safe
from tritongym.problems import Problem

log = logging.getLogger(__name__)
_CONFIG_FIELDS = {f.name for f in fields(EvalConfig)} - {"device"}
MAX_BATCH = 1024
MAX_WAIT_S = 60.0
_BEARER = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]


class ProblemIn(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    source: str = Field(min_length=1, max_length=1_000_000)
    entry_point: str = Field(default="Model", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    shrunk: dict[str, tuple[int, int]] = Field(
        default_factory=dict,
        max_length=64,
        description="Size constants shrunk for the CPU, name -> (full, small): the judge's second size follows",
    )


class TaskIn(BaseModel):
    problem: ProblemIn
    candidate: str = Field(max_length=10_000_000)
    config: dict = Field(default_factory=dict, description="EvalConfig fields (device is the service's)")
    priority: int = 0
    fresh: bool = Field(default=False, description="Evaluate again even if an identical result is stored")

    @field_validator("config")
    @classmethod
    def _valid_config(cls, value: dict) -> dict:
        unknown = set(value) - _CONFIG_FIELDS
        if unknown:
            raise ValueError(f"unknown config fields: {sorted(unknown)}; allowed: {sorted(_CONFIG_FIELDS)}")
        try:
            EvalConfig(**value)
        except (ConfigError, TypeError) as exc:
            raise ValueError(str(exc)) from exc
        return value


class SubmitIn(BaseModel):
    tasks: list[TaskIn] = Field(min_length=1, max_length=MAX_BATCH)


class QueryIn(BaseModel):
    ids: list[str] = Field(min_length=1, max_length=4096)
    wait: float = Field(default=0.0, ge=0.0, le=MAX_WAIT_S, description="Seconds to wait for one to finish")


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of the HTTP service. ``field_help(ServiceConfig, name)`` returns a field's documentation."""

    token: str | None = documented(
        "Bearer token required on every endpoint but /healthz and the API docs (required when binding "
        "beyond loopback).",
        default=None,
    )
    max_body_bytes: int = documented("Larger requests are refused with 413.", default=16 << 20)
    max_attempts: int = documented(
        "Dispatches of one task (across service restarts) before it is an infrastructure error.", default=3
    )

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1:
            raise ConfigError(f"max_body_bytes must be positive, not {self.max_body_bytes}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, not {self.max_attempts}")


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.submitted = Counter("tritongym_tasks_submitted", "Tasks accepted", registry=self.registry)
        self.cached = Counter("tritongym_tasks_cached", "Tasks answered from the result cache", registry=self.registry)
        self.completed = Counter("tritongym_tasks_completed", "Tasks finished", ["verdict"], registry=self.registry)
        self.in_flight = Gauge("tritongym_tasks_in_flight", "Tasks being evaluated", registry=self.registry)
        self.seconds = Histogram(
            "tritongym_evaluation_seconds", "Sandbox wall time per evaluation", registry=self.registry,
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180),
        )  # fmt: skip


class Dispatcher:
    """Moves queued tasks from the store into the pool and results back, waking long-pollers."""

    def __init__(self, env: WorkerPool, store: TaskStore, metrics: _Metrics, max_attempts: int):
        self.env, self.store, self.metrics, self.max_attempts = env, store, metrics, max_attempts
        self.capacity = 2 * env.slots
        self._in_flight = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._waiters: dict[str, list[asyncio.Future]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="tritongym-dispatcher", daemon=True)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        requeued = self.store.requeue_interrupted()
        if requeued:
            log.info("resuming %d task(s) interrupted by the last shutdown", requeued)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def poke(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                room = self.capacity - self._in_flight
            for task in self.store.claim(room):
                if task.attempts > self.max_attempts:
                    self._finish(task.id, EvalResult(
                        problem=task.problem.name, verdict=Verdict.INFRASTRUCTURE_ERROR,
                        feedback=f"The task was interrupted {task.attempts - 1} times; not the solution's fault.",
                    ), counted=False)  # fmt: skip
                    continue
                with self._lock:
                    self._in_flight += 1
                self.metrics.in_flight.inc()
                future = self.env.submit(task.problem, task.candidate, task.config, priority=task.priority)
                future.add_done_callback(lambda f, task_id=task.id: self._done(task_id, f))
            self._wake.wait(0.5)
            self._wake.clear()

    def _done(self, task_id: str, future) -> None:
        try:
            result = future.result()
        except Exception as exc:  # a bug in the pool: never the candidate's fault
            log.exception("evaluation of %s failed", task_id)
            result = EvalResult(problem="", verdict=Verdict.INFRASTRUCTURE_ERROR, feedback=f"internal error: {exc}")
        self._finish(task_id, result, counted=True)

    def _finish(self, task_id: str, result: EvalResult, counted: bool) -> None:
        self.store.complete(task_id, result)
        self.metrics.completed.labels(result.verdict.value).inc()
        if "sandbox_wall" in result.stage_seconds:
            self.metrics.seconds.observe(result.stage_seconds["sandbox_wall"])
        if counted:
            with self._lock:
                self._in_flight -= 1
            self.metrics.in_flight.dec()
            self._wake.set()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._notify, task_id)

    def _notify(self, task_id: str) -> None:
        for waiter in self._waiters.pop(task_id, []):
            if not waiter.done():
                waiter.set_result(task_id)

    async def wait_any(self, ids: list[str], timeout: float) -> None:
        """Wait until one of ``ids`` finishes or ``timeout`` passes (call from the event loop)."""
        waiter = asyncio.get_running_loop().create_future()
        for task_id in ids:
            self._waiters.setdefault(task_id, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            pass
        finally:
            for task_id in ids:
                remaining = [w for w in self._waiters.get(task_id, []) if w is not waiter]
                if remaining:
                    self._waiters[task_id] = remaining
                else:
                    self._waiters.pop(task_id, None)


class SafeJSONResponse(JSONResponse):
    """JSON that always encodes: text a candidate controls may hold lone surrogates, and result
    numbers may be NaN or infinite (sent as null), neither of which may cost a 500."""

    def render(self, content) -> bytes:
        return super().render(json_safe(content, finite=True))


def create_app(env: WorkerPool, store: TaskStore, config: ServiceConfig | None = None) -> FastAPI:
    """The service around a pool and a store (both owned by the caller)."""
    config = config or ServiceConfig()
    metrics = _Metrics()
    dispatcher = Dispatcher(env, store, metrics, config.max_attempts)
    fingerprint = env.fingerprint()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        dispatcher.start(asyncio.get_running_loop())
        yield
        dispatcher.stop()

    # The API pages (/docs, /redoc) load Swagger UI and ReDoc from files shipped in the fastapi-offline
    # package, not from a CDN, so they work on air-gapped clusters.
    app = FastAPIOffline(title="tritongym", version="1", lifespan=lifespan, static_url="/docs-assets",
                         default_response_class=SafeJSONResponse,
                         description="Evaluate Triton candidates against PyTorch references.")  # fmt: skip

    def authorised(credentials: Credentials) -> None:
        if config.token is None:
            return
        if credentials is None or not secrets.compare_digest(credentials.credentials, config.token):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token",
                                headers={"WWW-Authenticate": "Bearer"})  # fmt: skip

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        if request.method in ("POST", "PUT", "PATCH"):
            length = request.headers.get("content-length")
            if length is None:
                return JSONResponse({"detail": "a Content-Length header is required"}, status.HTTP_411_LENGTH_REQUIRED)
            if not length.isdigit() or int(length) > config.max_body_bytes:
                return JSONResponse(
                    {"detail": f"request body over {config.max_body_bytes} bytes; send smaller batches"},
                    status.HTTP_413_CONTENT_TOO_LARGE,
                )
        return await call_next(request)

    @app.post("/v1/tasks", status_code=status.HTTP_202_ACCEPTED, dependencies=[Depends(authorised)])
    def submit(body: SubmitIn) -> dict:
        rows = [
            (Problem(**t.problem.model_dump()), t.candidate, EvalConfig(**t.config), t.priority, t.fresh)
            for t in body.tasks
        ]
        ids = store.add(rows, fingerprint)
        metrics.submitted.inc(len(ids))
        cached = [t for t in store.get(ids) if t.cached]
        metrics.cached.inc(len(cached))
        for task in cached:
            metrics.completed.labels(task.result.verdict.value).inc()
        dispatcher.poke()
        return {"ids": ids}

    def _found(ids: list[str]) -> list[StoredTask]:
        tasks = store.get(ids)
        missing = sorted(set(ids) - {t.id for t in tasks})
        if missing:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown task ids: {missing[:10]}")
        return tasks

    @app.get("/v1/tasks/{task_id}", dependencies=[Depends(authorised)])
    async def get_task(task_id: str, wait: float = 0.0) -> dict:
        if not 0 <= wait <= MAX_WAIT_S:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"wait must be within [0, {MAX_WAIT_S}]")
        (task,) = _found([task_id])
        if task.state != "done" and wait > 0:
            await dispatcher.wait_any([task_id], wait)
            (task,) = _found([task_id])
        return task.to_json()

    @app.post("/v1/tasks/query", dependencies=[Depends(authorised)])
    async def query(body: QueryIn) -> dict:
        tasks = _found(body.ids)
        pending = [t.id for t in tasks if t.state != "done"]
        if pending and len(pending) == len(tasks) and body.wait > 0:
            await dispatcher.wait_any(pending, body.wait)
            tasks = _found(body.ids)
        return {"tasks": [t.to_json() for t in tasks]}

    @app.get("/v1/results.jsonl", dependencies=[Depends(authorised)])
    def export() -> StreamingResponse:
        return StreamingResponse(store.export(), media_type="application/x-ndjson")

    @app.get("/healthz")
    def health() -> dict:
        return {"status": "ok", "slots": env.slots, "device": fingerprint.get("device", ""), **store.counts()}

    @app.get("/metrics", dependencies=[Depends(authorised)])
    def prometheus() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(metrics.registry).decode(), media_type="text/plain; version=0.0.4")

    return app
