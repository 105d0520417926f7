"""How many hardware work queues each GPU runner's CUDA context gets, decided per problem by the judge.

A CUDA context with one work queue (``CUDA_DEVICE_MAX_CONNECTIONS=1``) is about a third as costly to
make while several runners start at once (H200: 0.14 s against 0.39 s with four at once,
benchmarks/cuda_context.py), which made an RL batch 1.46x faster. But it serialises what a PyTorch
library op runs on streams of its own (cuDNN's RNNs, some convolutions): in the runner, not in the
judge's context where the reference is timed with the driver's default, so a candidate leaving such
an op to PyTorch would measure slower than it is (KernelBench level 3's LSTMs and GRUs: 0.58 of
eager's speed against 0.81).

So the judge profiles each problem's reference once (its first trial's native forward under
torch.profiler: on which streams did its GPU work run?) and keeps the answer for the problem (``QueueChoice``, the
judge's own state, never a runner's): a reference whose work ran on one stream gets one-queue
runners, where nothing can be serialised that was not already; any other (work on several streams,
none seen, a profiler that failed) gets the judge's own setting, so that the candidate's context is
the reference's. A candidate that runs library-stream ops where the reference runs none can only make
itself slower in a one-queue runner (its extra streams serialised), never faster. The profile runs
in the process that times the reference, so it tells Kineto to finalize CUPTI when it ends
(``TEARDOWN_ENV``: a CUPTI left attached made the reference's launches slower and KernelBench's RNNs'
lazy candidates 1.04 of eager's speed instead of 0.83) and a timing waits ``SETTLE_S`` after it.

Spares are forked before their job is known: each gets the setting of the judge's last job
(``predicted``). A spare of the judge's own setting serves any job (no bias, its start is paid); a
one-queue spare is let go for a problem that needs the judge's setting, and a fresh runner forked.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterable

ONE_QUEUE = 1
JUDGES_OWN = 0
"""The runner keeps the judge's environment (the driver's default unless the pool's own
environment sets ``CUDA_DEVICE_MAX_CONNECTIONS``): its context is made as the reference's was."""
MAX_QUEUES = 32
ENV = "CUDA_DEVICE_MAX_CONNECTIONS"
OVERRIDE_ENV = "TRITONGYM_RUNNER_WORK_QUEUES"
"""How the pool passes ``PoolConfig.runner_work_queues`` to its judges: every runner gets that many."""
TEARDOWN_ENV = "TEARDOWN_CUPTI"
"""Kineto finalizes CUPTI when a profile ends only where this is 1 (not the default of every torch
version): CUPTI left attached after a profile slows the process's later CUDA calls, and the judge
times the reference in its own process (``StreamWatch``)."""
SETTLE_S = 1.0
"""Kineto finalizes CUPTI after a profile asynchronously: on an H200 (torch 2.11, CUDA 13) a launch
cost 6.2 us before a profile, 8.3-9.8 us after it without the teardown and for a moment after it with
the teardown, and 6.7 us one second later (benchmarks/cupti_after_profile.py). A timing starts at
least this long after the judge's last profile ended (``settle_s``)."""
LAUNCH_QUEUE_SCALE_ENV = "CUDA_SCALE_LAUNCH_QUEUES"
"""The driver's launch queue of every stream, scaled (``PoolConfig.launch_queue_scale``): set in a GPU
judge's environment before its CUDA context exists and inherited by its twin, its zygote and so every
runner, so that the reference's context and the candidate's queue alike. A forward of more GPU
operations than the queue holds cannot be queued behind a timing's hold: its brackets are late and
hold host time (speed.QUEUED_OPS)."""
LAUNCH_QUEUE_SCALES = ("2x", "4x")
"""The scales ``PoolConfig.launch_queue_scale`` takes (the driver also knows 0.25x and 0.5x: shorter)."""
LAUNCH_QUEUE_SCALE = "4x"
"""The scale every GPU judge gets by default (the local pool's ``launch_queue_scale``, Ray's workers)."""
WORK_KINDS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
"""Kineto's activity types of device records that are GPU work (profiling.WORK_KINDS)."""


def work_streams(records: Iterable[tuple[str, int]]) -> set[int]:
    """The streams that GPU work ran on, from (Kineto activity type, stream) pairs of a profile's
    device records (annotations are spans, not work)."""
    return {stream for kind, stream in records if kind in WORK_KINDS}


def queues_for(streams: set[int] | None, override: int | None = None) -> int:
    """The work queues of a runner for a problem whose reference's GPU work ran on ``streams`` (None:
    not known): ``override`` where the pool set one, one queue where it ran on exactly one stream,
    else the judge's own setting (``JUDGES_OWN``)."""
    if override is not None:
        return override
    return ONE_QUEUE if streams is not None and len(streams) == 1 else JUDGES_OWN


def fits(spare: int, needed: int) -> bool:
    """Whether a spare made with ``spare`` queues may run a job that needs ``needed``: the same
    setting, or the judge's own (a runner made as the reference's context was biases nothing)."""
    return spare in (needed, JUDGES_OWN)


def runner_env(queues: int, device: str) -> dict[str, str]:
    """What a runner's environment gets before its CUDA context is made: nothing on the CPU or with
    the judge's own setting."""
    return {ENV: str(queues)} if queues and device != "cpu" else {}


def parse_override(value: str | None) -> int | None:
    """The pool's override (``OVERRIDE_ENV``): None where it sets none."""
    if not value:
        return None
    queues = int(value)
    if not 1 <= queues <= MAX_QUEUES:
        raise ValueError(f"{OVERRIDE_ENV} must be between 1 and {MAX_QUEUES}, not {value!r}")
    return queues


def settle_s(profile_ended: float | None, now: float) -> float:
    """Seconds to wait before a timing so that it starts ``SETTLE_S`` after the judge's last profile
    ended (``profile_ended``, the monotonic clock's; None: none ran)."""
    return 0.0 if profile_ended is None else max(0.0, profile_ended + SETTLE_S - now)


def problem_key(source: str, entry_point: str) -> str:
    return hashlib.sha256(f"{entry_point}\0{source}".encode()).hexdigest()


class QueueChoice:
    """The judge's decisions, per problem, and the setting of the next spare it forks."""

    def __init__(self, override: int | None = None):
        self.override = override
        self.decided: dict[str, int] = {}
        self.predicted = ONE_QUEUE if override is None else override
        """The setting of the next spare (the last job's: a batch often repeats its problems)."""
        self.profile_ended: float | None = None
        """When the judge's last profile of a reference ended (``time.monotonic``; ``settle_s``)."""

    def known(self, key: str) -> bool:
        return self.override is not None or key in self.decided

    def decide(self, key: str, streams: set[int] | None) -> int:
        """Keep the setting for a problem whose reference's profile (just ended) saw ``streams``."""
        self.profile_ended = time.monotonic()
        self.decided[key] = queues_for(streams, self.override)
        return self.decided[key]

    def for_problem(self, key: str) -> int:
        """The setting a job of this problem needs (the judge's own for one never profiled)."""
        if self.override is not None:
            return self.override
        return self.decided.get(key, JUDGES_OWN)


class StreamWatch:
    """A context manager around one forward on the GPU: ``streams`` is then the set of streams its GPU
    work ran on (torch.profiler's CUDA records), or None where the profiler could not say. A failure
    of the profiler itself never fails the forward; the forward's own exceptions pass through."""

    def __init__(self, device) -> None:
        self.device = device
        self.streams: set[int] | None = None
        self._profiler = None

    def __enter__(self) -> StreamWatch:
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        os.environ[TEARDOWN_ENV] = "1"  # CUPTI goes when the profile ends: nothing of it in the judge's timing
        with contextlib.suppress(Exception):
            torch.cuda.synchronize(self.device)
            profiler = torch.profiler.profile(activities=activities)
            profiler.__enter__()
            self._profiler = profiler
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if self._profiler is None:
            return
        import torch

        from tritongym.evaluate.profiling import activity_kind

        try:
            if kind is None:
                torch.cuda.synchronize(self.device)
            self._profiler.__exit__(None, None, None)
            if kind is None:
                cuda = torch.autograd.DeviceType.CUDA
                events = [e for e in self._profiler.profiler.kineto_results.events() if e.device_type() == cuda]
                self.streams = work_streams((activity_kind(e, on_device=True), e.device_resource_id()) for e in events)
        except Exception:
            self.streams = None
