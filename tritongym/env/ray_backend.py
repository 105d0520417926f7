"""The Ray backend: one actor per GPU (``num_gpus=1``), or per CPU slot, each owning a warm sandbox.

Start a cluster as usual (``ray start --head`` on one node, ``ray start --address=HEAD:6379`` on the
others) and connect with ``RayEnv(address="auto")``; without an address a local cluster is started.
A task whose actor dies mid-evaluation is retried on the (restarted) actors up to ``max_attempts``
times, then reported as ``infrastructure_error``. Install with ``pip install 'tritongym[ray]'``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace

from tritongym.config_doc import documented
from tritongym.env.base import QueuedEnv
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import MAX_ATTEMPTS, evaluate_in
from tritongym.evaluate.judge.work_queues import LAUNCH_QUEUE_SCALE, LAUNCH_QUEUE_SCALE_ENV
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.evaluate.sandbox import Sandbox
from tritongym.problems import Problem


class SandboxWorker:
    """The actor: a warm sandbox on the GPU Ray assigned to it (or on the CPU)."""

    def __init__(self, device: str):
        env = {}
        if device == "cuda":  # the scaled launch queue as in the local pool (work_queues.LAUNCH_QUEUE_SCALE_ENV)
            env = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0"),
                   LAUNCH_QUEUE_SCALE_ENV: LAUNCH_QUEUE_SCALE}  # fmt: skip
        self.sandbox = Sandbox(device, env)
        self.sandbox.start()

    def info(self) -> dict:
        return self.sandbox.info

    def evaluate(self, problem: Problem, candidate: str | bytes, config: EvalConfig, attempts: int) -> EvalResult:
        return evaluate_in(self.sandbox, problem, candidate, config, attempts)


@dataclass(frozen=True)
class RayConfig:
    """Where the Ray backend runs candidates. ``field_help(RayConfig, name)`` returns a field's documentation."""

    address: str | None = documented(
        "Ray cluster to join ('auto' for the one `ray start` made); None starts a local cluster "
        "(ignored when Ray is already initialised in this process).",
        default=None,
    )
    devices: str = documented(
        "'auto' (GPUs if the cluster has any, else CPUs), 'cpu' or 'cuda' (one actor per GPU).", default="auto"
    )
    num_workers: int | None = documented(
        "Actors, each with a warm sandbox (default: one per GPU of the cluster, or one per CPU).", default=None
    )
    max_attempts: int = documented(
        "Tries of a task whose actor died before it is an infrastructure error.", default=MAX_ATTEMPTS
    )

    def __post_init__(self) -> None:
        if self.devices not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"devices must be 'auto', 'cpu' or 'cuda' on Ray, not {self.devices!r}")
        if self.num_workers is not None and self.num_workers < 1:
            raise ConfigError(f"num_workers must be at least 1, not {self.num_workers}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, not {self.max_attempts}")


class RayEnv(QueuedEnv):
    """The Env API over Ray actors: ``RayEnv(RayConfig(...))``, or the same fields as keywords
    (``RayEnv(address="auto")``)."""

    def __init__(self, config: RayConfig | None = None, **options):
        import ray

        self.config = replace(config or RayConfig(), **options)
        super().__init__()
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=self.config.address, include_dashboard=False, log_to_driver=False)
        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
        devices = self.config.devices
        if devices == "auto":
            devices = "cuda" if gpus else "cpu"
        if devices == "cuda" and not gpus:
            raise ConfigError("devices='cuda' but the Ray cluster has no GPUs")
        count = self.config.num_workers or (gpus if devices == "cuda" else cpus)
        actor = ray.remote(num_gpus=1 if devices == "cuda" else 0, num_cpus=1, max_restarts=-1, max_task_retries=0)(
            SandboxWorker
        )
        self.device = devices
        self.max_attempts = self.config.max_attempts
        self.actors = [actor.remote(devices) for _ in range(count)]
        self._info = ray.get(self.actors[0].info.remote())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._dispatch, name="tritongym-ray-dispatcher", daemon=True)
        self._thread.start()

    @property
    def slots(self) -> int:
        return len(self.actors)

    def fingerprint(self) -> dict:
        return self._info

    def _dispatch(self) -> None:
        ray = self._ray
        idle = list(self.actors)
        running: dict = {}  # task ref -> (item, actor)
        probation: dict = {}  # probe ref -> actor that failed a task; idle again once it answers
        while not self._stop.is_set():
            while idle and not self._queue.empty():
                item = self._queue.get()
                if item.attempts == 0 and not item.future.set_running_or_notify_cancel():
                    continue  # cancelled before it started
                item.attempts += 1
                worker = idle.pop()
                ref = worker.evaluate.remote(item.problem, item.candidate, item.config, self.max_attempts)
                running[ref] = (item, worker)
            if not running and not probation:
                self._stop.wait(0.02)
                continue
            done, _ = ray.wait([*running, *probation], num_returns=1, timeout=0.1)
            for ref in done:
                if ref in probation:
                    worker = probation.pop(ref)
                    try:
                        ray.get(ref)
                        idle.append(worker)
                    except ray.exceptions.RayActorError:
                        pass  # gone for good: the pool shrinks
                    continue
                item, worker = running.pop(ref)
                try:
                    item.future.set_result(ray.get(ref))
                    idle.append(worker)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                    # Ray restarts the actor; the probe waits for that before it serves again.
                    probation[worker.info.options(max_task_retries=-1).remote()] = worker
                    if item.attempts < self.max_attempts:
                        self._queue.put(item)  # to whichever actor is healthy first
                    else:
                        item.future.set_result(EvalResult(
                            problem=item.problem.name, verdict=Verdict.INFRASTRUCTURE_ERROR,
                            feedback=f"The worker died {item.attempts} times ({type(exc).__name__}); "
                                     "not the solution's fault.",
                        ))  # fmt: skip
                except Exception as exc:  # a bug of ours: surface it to the caller
                    item.future.set_exception(exc)
                    idle.append(worker)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for worker in self.actors:
            self._ray.kill(worker)
