"""The judge's memory: what one job holds, how much is free, what to do when it does not fit.

The judge's footprint is a small multiple of the problem's own size, ``S = I + O`` (the bytes of one
input set and of the reference's output on it), plus the reference model's parameters ``P``:

* correctness (one trial at a time): the trial's inputs ``I``, the reference's output ``O`` and its
  float64 copy ``O64`` (twice ``O`` for float32; on the host when the device cannot hold it), the
  candidate's inputs after forward (``I`` at most: whole on the GPU where the answer stays on the
  device, else on the host and moved one tensor at a time), and the comparison's temporaries,
  bounded (``compare.CHUNK_ELEMENTS`` elements at a time, whatever the output's size); the
  candidate's output, unless it stays on the device (below), is on the host as read and is moved a
  chunk at a time.
  Where the reference changes its inputs in place, the changed copies ``I`` and ``I64`` are kept too.
  With the model and its float64 copy: ``P + P64 + 2 I + O + O64 (+ I + I64)``
  (:attr:`Footprint.correctness`). On a GPU the inputs go to the runner through shared input slots
  (shared_inputs.py): the slots' ``I`` is the judge's and the runner holds no copy of its own, the
  same memory in all. Where the answer stays on the device as well (:func:`answer_on_device`: a
  problem of ``I + O`` up to an eighth of the judge's share of the GPU, :func:`answer_limit`), the
  judge holds the output slot and its copy of it (``2 O``) and the inputs after forward whole on the
  GPU (the ``I`` counted above): ``2 O`` more than the socket's path (:data:`DEVICE_ANSWER_FACTOR`).
* timing: the last trial is dropped first (timing and profiling draw input sets of their own).
  Per call of a batch of ``N``: the fresh input set (the reference runs on it) and the slot it is
  copied into for the runner, the reference's output, the runner's output slot and the copy the
  judge makes of it inside the bracket: ``2 I + 3 O`` per call, and ``I`` more where the reference
  mutates its inputs (it runs on a copy, so that the candidate gets them as made). ``N`` is chosen
  so that these fit in ``TIMING_SHARE`` of the memory available at that moment
  (:func:`timing_batch`, called by ``speed._batch_size``); the rest is for one forward's output and
  temporaries, the runner's and the other judges'.

Everything a job allocated is released when it ends (:func:`release`), so the next job, the next
runner and the other judges on the same GPU find it free.

An out-of-memory error raised in the judge's process is the judge's: the job ends as an
``infrastructure_error`` saying how much the problem needed and how much was free (:func:`judge_failure`),
never as the candidate's crash; unless the runner holds more GPU memory than its job allows
(gpu_memory.runner_gpu_limit, measured by the judge): then it is the candidate's ``out_of_memory``
(judge.blame_runner). One raised in the runner while it runs the candidate is the candidate's
``out_of_memory``.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass
from typing import Any

import torch

from tritongym.evaluate.judge.feedback import Failure, detail, short
from tritongym.evaluate.judge.tree import tensor_leaves
from tritongym.evaluate.result import Verdict

GIB = float(1 << 30)
HOST_FLOAT64_FACTOR = 4
"""The float64 reference runs on the host (the device could not hold it) only where the host has
this many times its inputs and output in float64 available (the forward's temporaries): the kernel's
OOM killer, not an exception, is what a host that overcommits answers."""
TIMING_SHARE = 0.5
"""Share of the free GPU memory the timing batch's slots may take (the rest: the forwards' own
temporaries, the runner's, the other judges')."""
TIMING_BYTES_PER_CALL = (2, 3)
"""(inputs, outputs) multiples one call of a timing batch holds: the input set and the runner's slot
it is copied into; the reference's output, the runner's output slot and the judge's copy of it (and
one input set more where the reference mutates its inputs: :meth:`Footprint.timing`)."""
DEVICE_ANSWER_BYTES = 1 << 30
"""The smallest limit on a problem whose trials' answers stay on the GPU (:func:`answer_limit`)."""
DEVICE_ANSWER_DIVISOR = 8
"""A judge keeps answers on the GPU for problems of up to this fraction (one over it) of its share of
the GPU (:func:`answer_limit`)."""


def answer_limit(total: int, judges: int) -> int:
    """The largest problem (``I + O`` bytes) whose trials' answers stay on the GPU: an eighth of each
    judge's share of a GPU of ``total`` bytes (``DEVICE_ANSWER_DIVISOR``), at least
    ``DEVICE_ANSWER_BYTES``. The output slots a runner maps are not given back before the judge
    exits (speed.SharedArena), so this bounds what a large problem leaves held for later jobs; a
    larger problem's output comes through the socket (host copies: about 10 s per trial for 4 GiB)."""
    return max(DEVICE_ANSWER_BYTES, total // (DEVICE_ANSWER_DIVISOR * max(judges, 1)))


DEVICE_ANSWER_FACTOR = (1, 2)
"""(inputs, outputs) multiples of device memory the judge allocates for an answer on the device: its
copy of the inputs after forward (whole; counted in :attr:`Footprint.correctness` already, where the
socket's are moved one tensor at a time), the output slot and its copy of the output (``2 O``
beyond :attr:`Footprint.correctness`, :func:`job_bytes`)."""
_OOM_PHRASES = ("out of memory", "can't allocate memory", "cannot allocate memory")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether an exception is an allocation failure: Python's MemoryError, torch's
    OutOfMemoryError (CUDA), or the CPU allocator's RuntimeError."""
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    return isinstance(exc, RuntimeError) and any(phrase in str(exc).lower() for phrase in _OOM_PHRASES)


def nbytes(value: Any) -> int:
    """Bytes of the tensors in a nested value."""
    return sum(t.nbytes for t in tensor_leaves(value))


@dataclass(frozen=True)
class Footprint:
    """The problem's own size, and what the judge holds for it."""

    inputs: int
    """Bytes of one input set."""
    outputs: int
    """Bytes of the reference's output on it."""
    params: int
    """Bytes of the reference model's parameters and buffers."""
    float64: bool
    """Whether a float64 copy of the model and of each output is held."""
    mutates: bool = False
    """Whether the reference changes its inputs in place (their changed copies are held too)."""

    @classmethod
    def of(cls, model: torch.nn.Module, inputs: Any, output: Any, float64: bool, mutates: bool = False) -> Footprint:
        params = sum(t.nbytes for t in model.state_dict().values() if isinstance(t, torch.Tensor))
        return cls(nbytes(inputs), nbytes(output), params, float64, mutates)

    def beside(self, other: Footprint) -> Footprint:
        """The footprint of this problem and ``other`` held together (a shrunk problem's reference at
        its second size, held with the first through the job: second_size.py)."""
        return Footprint(self.inputs + other.inputs, self.outputs + other.outputs, self.params + other.params,
                         self.float64 or other.float64, self.mutates or other.mutates)  # fmt: skip

    def _wide(self, size: int) -> int:
        return 2 * size if self.float64 else 0

    @property
    def correctness(self) -> int:
        """Most bytes the judge holds while it checks one trial: ``P + P64 + 2 I + O + O64``, and
        ``I + I64`` more where the reference mutates its inputs."""
        held = self.params + self._wide(self.params) + 2 * self.inputs + self.outputs + self._wide(self.outputs)
        return held + (self.inputs + self._wide(self.inputs) if self.mutates else 0)

    def timing(self, calls: int) -> int:
        """Bytes of a timing batch of ``calls`` calls: ``2 I + 3 O`` each (TIMING_BYTES_PER_CALL),
        ``I`` more where the reference mutates its inputs."""
        per_input, per_output = TIMING_BYTES_PER_CALL
        per_input += 1 if self.mutates else 0
        return calls * (per_input * self.inputs + per_output * self.outputs)

    def describe(self) -> str:
        return (
            f"one input set {self.inputs / GIB:.2f} GiB, its output {self.outputs / GIB:.2f} GiB, "
            f"parameters {self.params / GIB:.2f} GiB; the judge holds up to {self.correctness / GIB:.2f} GiB "
            f"while it checks a trial and {self.timing(1) / GIB:.2f} GiB per call of a timing batch"
        )


def answer_on_device(footprint: Footprint, available: int, limit: int) -> bool:
    """Whether a job's trial answers stay on the GPU (output slots, inputs after forward copied on
    the device): a problem of at most ``limit`` bytes (:func:`answer_limit`) whose extra device
    memory for it (``DEVICE_ANSWER_FACTOR``) fits in ``TIMING_SHARE`` of the ``available`` bytes;
    else the socket."""
    per_input, per_output = DEVICE_ANSWER_FACTOR
    extra = per_input * footprint.inputs + per_output * footprint.outputs
    return footprint.inputs + footprint.outputs <= limit and extra <= TIMING_SHARE * available


def available_bytes(device: torch.device) -> int:
    """Memory this process could still allocate on a GPU: free on the device plus what its own
    allocator holds unused. On the CPU: the host's available memory."""
    if device.type != "cuda":
        return host_available_bytes()
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo (0 where it cannot be read)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


RUNNER_FACTOR = 3
"""The runner's share of a job, in multiples of the problem's size ``I + O``: its copy of the inputs,
its output and as much again for the candidate's temporaries (an estimate: the candidate's own)."""


def job_bytes(footprint: Footprint, limit: int) -> int:
    """GPU memory one job takes at its peak, judge and runner (``3 (I + O)``, RUNNER_FACTOR): while
    a trial is checked (with the output slot and its copy, ``2 O``, where the answer may stay on the
    device: :func:`answer_on_device`), or while a timing batch of one call runs beside the model
    (the trial is dropped by then)."""
    runner = RUNNER_FACTOR * (footprint.inputs + footprint.outputs)
    model = footprint.params + footprint._wide(footprint.params)
    answer = 2 * footprint.outputs if footprint.inputs + footprint.outputs <= limit else 0
    return max(footprint.correctness + answer, model + footprint.timing(1)) + runner


def needs_whole_gpu(footprint: Footprint, total: int, judges: int) -> bool:
    """Whether a job is too large to share its GPU with the other judges on it: each judge's budget
    is ``total / judges``; a larger job holds the GPU's lock exclusively for its whole length, so
    the others wait instead of running out of memory beside it."""
    return judges > 1 and job_bytes(footprint, answer_limit(total, judges)) > total // judges


class JudgeOutOfMemory(Failure):
    """The judge's memory for the problem is not there (``timing_batch``): its
    ``infrastructure_error``, unless the runner holds more than its job allows (judge.py blames it)."""


def timing_batch(footprint: Footprint, available: int, wanted: int) -> int:
    """Calls per timing batch: ``wanted`` at most, as many as fit in ``TIMING_SHARE`` of
    ``available`` bytes, one if only one fits in all of it. Raises the judge's failure where not
    even one call fits."""
    per_call = max(footprint.timing(1), 1)
    calls = min(wanted, int(available * TIMING_SHARE) // per_call)
    if calls >= 1:
        return calls
    if per_call <= available:
        return 1
    raise JudgeOutOfMemory(
        Verdict.INFRASTRUCTURE_ERROR,
        f"The judge cannot time this problem on this device: one call of a timing batch needs "
        f"{per_call / GIB:.2f} GiB of GPU memory and {available / GIB:.2f} GiB are available beside the "
        f"candidate's process ({footprint.describe()}). This is not the solution's fault; evaluate it "
        "without timing, or on a device with more memory.",
    )


def answer_bytes(footprint: Footprint) -> int:
    """Most payload bytes of a runner's answer to a trial: its inputs back and an output up to four
    times the reference's (a wrong dtype or shape is reported, not refused)."""
    return footprint.inputs + 4 * footprint.outputs + (1 << 20)


def runner_host_limit(limit: int, footprint: Footprint) -> int:
    """The host memory a runner may use: the job's limit plus what the problem itself puts in its
    memory: the tensors the protocol holds (the inputs as received, the answer as sent: ``2 (I + O)``)
    and the model as its constructor builds it on the host before it moves to a GPU (``2 P``: the
    parameters and a copy in flight), so that a problem larger than the limit is not the candidate's
    out_of_memory (KernelBench level 3's ShallowWideMLP builds 8 GiB of weights)."""
    return limit + 2 * (footprint.inputs + footprint.outputs + footprint.params)


def judge_host_bytes(footprint: Footprint, device: torch.device, float64_on_host: bool) -> int:
    """Host memory the judge may need for this problem beyond its own base: an answer in transit
    (as received, then as tensors), and the trial itself where it lives on the host (the CPU, or a
    float64 reference the GPU could not hold). The pool raises its watch on the judge by this much."""
    extra = 2 * answer_bytes(footprint)
    if device.type == "cpu":
        extra += footprint.correctness
    elif float64_on_host:
        extra += HOST_FLOAT64_FACTOR * 2 * (footprint.inputs + footprint.outputs)
    return extra


def _memory_state(device: torch.device) -> str:
    if device.type != "cuda":
        return f"{host_available_bytes() / GIB:.1f} GiB of host memory available"
    try:
        free, total = torch.cuda.mem_get_info(device)
        mine = torch.cuda.memory_allocated(device)
    except Exception:  # the context itself may be what failed
        return "the device's memory could not be read"
    return f"{free / GIB:.1f} GiB free of {total / GIB:.1f} GiB on the GPU, {mine / GIB:.1f} GiB held by the judge"


def judge_failure(exc: BaseException, stage: str, device: torch.device, footprint: Footprint | None) -> Failure:
    """The infrastructure failure of a job whose judge ran out of memory."""
    where = "GPU" if isinstance(exc, torch.OutOfMemoryError) and device.type == "cuda" else "host"
    sizes = f" ({footprint.describe()})" if footprint is not None else ""
    return Failure(
        Verdict.INFRASTRUCTURE_ERROR,
        f"The judge ran out of {where} memory during {stage}: this problem does not fit on this device "
        f"beside the candidate's process{sizes}; {_memory_state(device)}. This is not the solution's fault: "
        f"{short(exc, 300)}",
        detail(exc),
    )


def free_cached(device: torch.device) -> None:
    """Collect cycles and give the allocator's cached GPU memory back to the device."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


GIVE_BACK_BYTES = 1 << 30
"""A job whose input set and output take this much or more gives the judge's cached GPU memory back
once it made a trial, and after timing (:func:`give_back`)."""


def give_back(device: torch.device, size: int) -> None:
    """After making a trial of ``size`` bytes (an input set and its output), or timing it: the
    reference's temporaries (the inputs' copy it ran on, their float64 copy) or the batch stay in the
    judge's cache unless given back, and the runner, a process of its own, needs that memory for its
    copy of the inputs. Small jobs keep the cache (cheaper)."""
    if device.type == "cuda" and size >= GIVE_BACK_BYTES:
        torch.cuda.empty_cache()


def release(device: torch.device) -> None:
    """After a job: drop the job's reference module and free the cache, so that the next runner and
    the other judges on the same GPU find the job's memory free."""
    sys.modules.pop("reference", None)
    free_cached(device)
