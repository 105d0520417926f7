"""A runner's GPU memory as the judge measures it: NVML's per-process usage, read by the judge.

CUDA allocations are in no resident set, so the host measure (runners.tree_memory_bytes) never sees
them. NVML (the driver's management library, ``libnvidia-ml.so.1``, loaded with ctypes: no new
dependency) reports how much device memory each process on a GPU holds, its context included; the
judge reads it and sums the entries of the runner's process tree. Candidate code cannot edit it: it
comes from the driver, not from the runner.

NVML names processes by the pids of the host's PID namespace. Where the judge runs in a namespace of
its own (a container with its own pids), those pids are not the judge's, and per-process readings
cannot be matched to a runner: :meth:`Nvml.sees` tells which (the judge looks for its own pid once
its CUDA context exists). There the judge falls back on what it can measure without trusting the
runner: when its own allocation fails, it kills the runner and counts the device memory that the
runner's end gives back (:func:`freed_by`).
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

NVML_LIBRARY = "libnvidia-ml.so.1"
NOT_AVAILABLE = (1 << 64) - 1
"""NVML's ``usedGpuMemory`` where it cannot tell (``NVML_VALUE_NOT_AVAILABLE``)."""
_INSUFFICIENT_SIZE = 7
MAX_PROCESSES = 1024
"""Most processes one reading lists (a GPU shared by more is not one this judge can attribute)."""

GPU_RUNNER_BASE_BYTES = 3 << 30
"""GPU memory a runner may hold whatever the problem: its CUDA context (about 0.5 GiB), Triton's and
PyTorch's modules, cuBLAS and cuDNN workspaces and the caching allocator's rounding (calibrated on
an H200 with the bundled solutions and KernelBench problems: docs/environment.md)."""
GPU_RUNNER_FACTOR = 3
"""The runner's share of a problem on the GPU beyond the base, in multiples of ``I + O``: its inputs
(where they do not come through shared slots), its output and as much again for temporaries
(memory.RUNNER_FACTOR, the judge's estimate when it sizes its own share)."""
GPU_PARAMS_FACTOR = 2
"""Multiples of the reference model's parameters a runner may hold: the state dict it receives and
the candidate model's own copy."""


class _Process(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def per_pid(entries: Iterable[tuple[int, int]]) -> dict[int, int | None]:
    """NVML's (pid, bytes) entries summed by pid (a process may be listed once per context);
    ``None`` for a pid whose usage NVML could not tell."""
    found: dict[int, int | None] = {}
    for pid, used in entries:
        if used == NOT_AVAILABLE or found.get(pid, 0) is None:
            found[pid] = None
        else:
            found[pid] = found.get(pid, 0) + used
    return found


def tree_gpu_bytes(readings: dict[int, int | None], pids: Iterable[int]) -> int | None:
    """GPU bytes the processes ``pids`` hold in a reading (``per_pid``); None where one of them is
    listed without a usage (it cannot be bounded)."""
    total = 0
    for pid in pids:
        used = readings.get(pid, 0)
        if used is None:
            return None
        total += used
    return total


def runner_gpu_limit(limit: int, inputs: int, outputs: int, params: int) -> int:
    """The GPU memory a runner may hold: the job's memory limit (the candidate's own allowance, as on
    the host: memory.runner_host_limit), a base for what every runner holds (GPU_RUNNER_BASE_BYTES),
    and what the problem itself asks of it: ``3 (I + O)`` (GPU_RUNNER_FACTOR) and ``2 P``
    (GPU_PARAMS_FACTOR)."""
    return limit + GPU_RUNNER_BASE_BYTES + GPU_RUNNER_FACTOR * (inputs + outputs) + GPU_PARAMS_FACTOR * params


@dataclass(frozen=True)
class Blame:
    """Whose a GPU out-of-memory in the judge is, once the runner's memory was measured."""

    runner_bytes: int | None
    """What the runner held (None: it could not be measured)."""
    limit: int
    """What it may hold (:func:`runner_gpu_limit`)."""
    how: str
    """How it was measured ("NVML's per-process usage", "freed when it was killed")."""

    @property
    def candidates(self) -> bool:
        """Whether the failure is the candidate's: its runner held more than it may."""
        return self.runner_bytes is not None and self.runner_bytes > self.limit

    def feedback(self, stage: str) -> str:
        return (
            f"Held {self.runner_bytes / 2**30:.2f} GiB of GPU memory during {stage}, more than the "
            f"{self.limit / 2**30:.2f} GiB its job allows ({self.how}), so that the judge's own memory for "
            "the problem ran out. Allocate what the forward needs, when it needs it."
        )


def freed_by(free: Callable[[], int], kill: Callable[[], None], settle_s: float = 5.0, poll_s: float = 0.05) -> int:
    """Device memory a runner's end gives back: the free memory (``free``) after ``kill`` less
    before, read until it stops rising (the driver frees a dead context's memory shortly after the
    process is reaped) or ``settle_s`` passed. Other processes on the GPU may allocate or free at
    the same time: a measure of the device, not of the runner alone."""
    before = free()
    kill()
    deadline, best, still = time.monotonic() + settle_s, before, 0
    while time.monotonic() < deadline and still < 4:
        time.sleep(poll_s)
        now = free()
        still = still + 1 if now <= best else 0
        best = max(best, now)
    return max(best - before, 0)


class Nvml:
    """NVML's view of one GPU (by UUID), loaded once per judge."""

    def __init__(self, lib: ctypes.CDLL, handle: ctypes.c_void_p):
        self._lib, self._handle = lib, handle
        try:
            self._query = lib.nvmlDeviceGetComputeRunningProcesses_v3
        except AttributeError:  # a driver older than 510
            self._query = lib.nvmlDeviceGetComputeRunningProcesses_v2

    @classmethod
    def open(cls, uuid: str) -> Nvml | None:
        """NVML for the GPU of this UUID (``GPU-...``, as NVML spells it; torch's ``props.uuid`` lacks
        the prefix); None where the library or the device cannot be had."""
        try:
            lib = ctypes.CDLL(NVML_LIBRARY)
            if lib.nvmlInit_v2() != 0:
                return None
            handle = ctypes.c_void_p()
            name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            if lib.nvmlDeviceGetHandleByUUID(name.encode(), ctypes.byref(handle)) != 0:
                return None
            nvml = cls(lib, handle)
        except (OSError, AttributeError):
            return None
        return nvml if nvml.processes() is not None else None

    def processes(self) -> dict[int, int | None] | None:
        """The GPU's compute processes and their bytes (``per_pid``), None where NVML failed."""
        count = ctypes.c_uint(64)
        while True:
            infos = (_Process * count.value)()
            asked = count.value
            code = self._query(self._handle, ctypes.byref(count), infos)
            if code == 0:
                return per_pid((infos[i].pid, infos[i].usedGpuMemory) for i in range(count.value))
            if code != _INSUFFICIENT_SIZE or asked >= MAX_PROCESSES:
                return None
            count = ctypes.c_uint(min(max(count.value + 16, 2 * asked), MAX_PROCESSES))

    def memory(self) -> tuple[int, int] | None:
        """(free, total) bytes of the device, None where NVML failed."""
        info = _Memory()
        with contextlib.suppress(OSError):
            if self._lib.nvmlDeviceGetMemoryInfo(self._handle, ctypes.byref(info)) == 0:
                return info.free, info.total
        return None

    def sees(self, pid: int) -> bool:
        """Whether NVML lists this process (one with a CUDA context on the GPU) under this pid: the
        judge asks for its own once its context exists; False where the pids are another namespace's."""
        readings = self.processes()
        return readings is not None and pid in readings
