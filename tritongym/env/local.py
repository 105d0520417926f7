"""The local pool: warm sandboxes on this host's GPUs (or CPU cores with Triton's interpreter)."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

from tritongym.config_doc import documented
from tritongym.env.base import QueuedEnv
from tritongym.errors import ConfigError, SandboxError
from tritongym.evaluate.evaluator import MAX_ATTEMPTS, cuda_device_count, evaluate_in
from tritongym.evaluate.judge.work_queues import LAUNCH_QUEUE_SCALE, LAUNCH_QUEUE_SCALE_ENV, LAUNCH_QUEUE_SCALES
from tritongym.evaluate.sandbox import Sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PoolConfig:
    """Where the local pool runs candidates. ``field_help(PoolConfig, name)`` returns a field's documentation."""

    devices: str = documented(
        "'auto' (every visible GPU, else the CPU), 'cpu', 'cuda' (every GPU) or a list such as 'cuda:0,2'.",
        default="auto",
    )
    sandboxes_per_device: int | None = documented(
        "Warm sandboxes per GPU (default 1; each GPU judge's memory budget is the GPU's memory divided by "
        "this, and a job larger than that runs alone on its GPU); on the CPU, the number of sandboxes "
        "(default: the core count).",
        default=None,
    )
    max_attempts: int = documented(
        "Tries of a job lost through no fault of the candidate before it is an infrastructure error.",
        default=MAX_ATTEMPTS,
    )
    runner_work_queues: int | None = documented(
        "Hardware work queues of every GPU runner's CUDA context (CUDA_DEVICE_MAX_CONNECTIONS), overriding "
        "the judge's choice. By default each judge profiles a problem's reference once and gives its "
        "candidates' runners one queue where the reference's GPU work ran on one stream (a context about three "
        "times cheaper to make while several start at once: an RL batch on one H200, 0.47 s per candidate "
        "against 0.61 with every runner on the judge's setting), else the judge's own setting, so that work a "
        "library op runs on streams of its own "
        "(cuDNN's RNNs, some convolutions) is not serialised in the candidate's process alone (KernelBench "
        "level 3's LSTMs and GRUs as PyTorch's own code measured 0.58 of eager's speed with one queue against "
        "0.81). A number here gives every runner that many, whatever its problem runs.",
        default=None,
    )
    launch_queue_scale: str | None = documented(
        "How many times the driver's default launch queue each stream of every GPU judge, its twin and its "
        "runners gets (CUDA_SCALE_LAUNCH_QUEUES: '2x' or '4x'; None: the driver's default). A timing bracket's "
        "work is queued behind a hold; a forward of more GPU operations than a stream's queue holds (about a "
        "thousand one-element launches at the default, on an H200) blocks its host until the hold ends, and its "
        "brackets then hold host time and read the runner's side slower than the judge's (an A/A of 1,202 "
        "PyTorch launches a forward read 0.39-0.43, of 202 launches 0.95-0.98; BENCHMARKS.md, session 12).",
        default=LAUNCH_QUEUE_SCALE,
    )

    def __post_init__(self) -> None:
        if self.sandboxes_per_device is not None and self.sandboxes_per_device < 1:
            raise ConfigError(f"sandboxes_per_device must be at least 1, not {self.sandboxes_per_device}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.runner_work_queues is not None and not 1 <= self.runner_work_queues <= 32:
            raise ConfigError(f"runner_work_queues must be between 1 and 32, not {self.runner_work_queues}")
        if self.launch_queue_scale not in (None, *LAUNCH_QUEUE_SCALES):
            raise ConfigError(
                f"launch_queue_scale must be one of {LAUNCH_QUEUE_SCALES} or None, not {self.launch_queue_scale!r}"
            )


def device_slots(config: PoolConfig) -> list[tuple[str, dict[str, str]]]:
    """(device, extra environment) for each sandbox of the pool."""
    spec = config.devices
    gpus = cuda_device_count()
    if spec == "auto":
        spec = "cuda" if gpus else "cpu"
    if spec == "cpu":
        return [("cpu", {})] * (config.sandboxes_per_device or os.cpu_count() or 1)
    if spec == "cuda":
        indices = list(range(gpus))
    elif spec.startswith("cuda:"):
        try:
            indices = [int(i) for i in spec.removeprefix("cuda:").split(",")]
        except ValueError:
            raise ConfigError(f"bad device list {spec!r}; expected e.g. 'cuda:0,1'") from None
    else:
        raise ConfigError(f"devices must be 'auto', 'cpu', 'cuda' or 'cuda:I,J', not {spec!r}")
    if not indices or max(indices) >= gpus:
        raise ConfigError(f"devices {spec!r} requested but {gpus} CUDA device(s) are visible")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    physical = visible.split(",") if visible else [str(i) for i in range(gpus)]
    per = config.sandboxes_per_device or 1
    env = {"TRITONGYM_JUDGES_PER_GPU": str(per)}  # each judge's memory budget is its GPU's / per
    if config.runner_work_queues is not None:
        env["TRITONGYM_RUNNER_WORK_QUEUES"] = str(config.runner_work_queues)  # work_queues.OVERRIDE_ENV
    if config.launch_queue_scale is not None:  # the judge's environment: its twin, zygote and runners inherit it
        env[LAUNCH_QUEUE_SCALE_ENV] = config.launch_queue_scale
    return [("cuda", {"CUDA_VISIBLE_DEVICES": physical[i]} | env) for i in indices for _ in range(per)]


class LocalEnv(QueuedEnv):
    """Warm sandboxes fed from one priority queue. Use as a context manager, or call close()."""

    def __init__(self, config: PoolConfig | None = None):
        super().__init__()
        self.config = config or PoolConfig()
        self._sandboxes = [Sandbox(device, env) for device, env in device_slots(self.config)]
        self._ready = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve, args=(sb,), name=f"tritongym-worker-{i}", daemon=True)
            for i, sb in enumerate(self._sandboxes)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def slots(self) -> int:
        return len(self._sandboxes)

    @property
    def device(self) -> str:
        return self._sandboxes[0].device

    @property
    def sandbox_starts(self) -> list[int]:
        """Judges each sandbox slot has started (1 each while none was lost; candidates get runners)."""
        return [sb.starts for sb in self._sandboxes]

    @property
    def sandbox_startups(self) -> list[dict[str, float]]:
        """Each started sandbox's judge start, part by part (its ``startup_seconds``: judge.Startup)."""
        return [sb.info.get("startup_seconds", {}) for sb in self._sandboxes if sb.info]

    def fingerprint(self, timeout_s: float = 600.0) -> dict:
        """Device name and versions of this pool (waits for the first sandbox to be ready)."""
        self._ready.wait(timeout_s)
        return next((sb.info for sb in self._sandboxes if sb.info), {})

    def _serve(self, sandbox: Sandbox) -> None:
        try:
            sandbox.start()  # warm before the first task arrives
            self._ready.set()
        except SandboxError as exc:
            log.warning("sandbox did not start (it will be retried per task): %s", exc)
        try:
            while True:
                item = self._queue.get()
                if item.problem is None:
                    return
                if not item.future.set_running_or_notify_cancel():
                    continue
                try:
                    waited = time.monotonic() - item.submitted
                    result = evaluate_in(sandbox, item.problem, item.candidate, item.config, self.config.max_attempts)
                    result.stage_seconds["queue"] = round(waited, 4)
                    item.future.set_result(result)
                    self._ready.set()
                except BaseException as exc:  # a bug of ours: surface it to the caller, keep serving
                    item.future.set_exception(exc)
        finally:
            sandbox.close()

    def close(self) -> None:
        """Stop the workers after the queued tasks (they still run) and shut the sandboxes down."""
        for _ in self._threads:
            self._queue.put(self._stop_request())
        for thread in self._threads:
            thread.join()
