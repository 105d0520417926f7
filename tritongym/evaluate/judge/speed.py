"""Speed and coverage on a GPU, measured by the judge.

Timing never trusts the runner's clock. Both sides are timed by the judge's own clock around a
synchronised batch of ``N`` calls on ``N`` fresh input sets (new secret seeds every batch, integer
inputs included), and the two kinds of batch alternate:

* reference batch (judge process): start the clock; copy the fresh inputs into private input
  slots; run the reference on each and copy each output into its output slot; copy the output slots
  to private memory; synchronise; stop the clock.
* candidate batch: start the clock; copy the same fresh inputs into the input slots the runner
  mapped (CUDA IPC, a memory pool of their own, so no other judge memory shares their segments);
  synchronise; tell the runner ``Batch``; the runner runs forward on each set and copies each output
  into its output slot (also mapped), synchronises and answers ``BatchDone``; copy the output slots
  to private memory; synchronise; stop the clock.

The runner sees each batch's inputs only after the clock started, so it cannot work ahead; the output
slots are filled with the poison byte before every batch and every output of every batch is compared
with the reference's on the same inputs after the clock stopped, so an answer sent before the work was
done (or work skipped) shows up as poison or a wrong value. After the inputs are copied in, every
bracket writes four times the L2's size, so every call reads its inputs from memory. A third, empty
bracket per repetition (the same copies, no forward) is measured by the judge and subtracted from both
sides, so the copies do not dilute the speedup; what remains of the candidate's bracket still holds all of its work. The
candidate's bracket holds one message round trip more than the reference's (tens of microseconds),
which ``N`` is chosen to amortise (``TARGET_BATCH_S``); the bias is against the candidate.

Coverage comes from one forward profiled in the runner (profiling.py): it is the runner's word.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import secrets
import time
from typing import Any

import torch

from tritongym.evaluate import compare, timing
from tritongym.evaluate.compare import LOOSE_TOLERANCE
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.memory import Footprint, available_bytes, timing_batch
from tritongym.evaluate.judge.tree import clone, map_tensors, tensor_leaves
from tritongym.evaluate.result import Verdict

TARGET_BATCH_S = 0.002
"""A batch lasts at least this long (the message round trip is amortised over it)."""
MAX_BATCH = 64
SLOT_BYTES = 2 << 30
"""Most GPU memory for one side's slots (inputs and outputs of a batch); fewer calls where the GPU's
free memory cannot hold the batch (memory.timing_batch)."""
POISON = 0xFF
L2_FLUSH_FACTOR = 4
"""After the inputs are copied in, this many times the L2's size is written (in every bracket)."""


_exclusive: set[int] = set()
"""Lock descriptors this process holds exclusively (a job too large to share its GPU holds it for
its whole length; the stages' own uses of the lock inside that are no-ops)."""


@contextlib.contextmanager
def gpu_lock(fd: int, exclusive: bool):
    """This GPU's lock, shared by every judge on the machine: trials hold it shared, timing and
    profiling exclusively, so nothing else of ours runs on the GPU while a candidate is timed.
    A no-op on the CPU (fd < 0) and inside an exclusive hold of the same lock."""
    if fd < 0 or fd in _exclusive:
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    if exclusive:
        _exclusive.add(fd)
    try:
        yield
    finally:
        _exclusive.discard(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)


# --- slots and their export ----------------------------------------------------------------------


def _span(t: torch.Tensor) -> int:
    """Elements of storage one tensor of this shape and stride covers."""
    return 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True) if s > 0) if t.numel() else 0


def allocate_slots(inputs: list, outputs: Any, count: int, device) -> tuple[list, list]:
    """``count`` input and output slots: per tensor leaf one (count, ...) tensor whose element k has
    the leaf's shape and stride (inputs) or is contiguous (outputs)."""
    ins = []
    for leaf in tensor_leaves(inputs):
        span = max(_span(leaf), 1)
        ins.append(torch.empty_strided((count, *leaf.shape), (span, *leaf.stride()), dtype=leaf.dtype, device=device))
    outs = [torch.empty((count, *t.shape), dtype=t.dtype, device=device) for t in tensor_leaves(outputs)]
    return ins, outs


def export(t: torch.Tensor) -> list:
    """A CUDA IPC handle of a slot as JSON-able values (torch.multiprocessing's reduction)."""
    from torch.multiprocessing.reductions import reduce_tensor

    _, a = reduce_tensor(t)
    counter = a[11].decode(errors="replace").lstrip("/") if isinstance(a[11], bytes) else ""
    if counter and os.geteuid() == 0:  # a runner of its own user opens the producer's reference counter too
        with contextlib.suppress(OSError):
            os.chmod(f"/dev/shm/{counter}", 0o666)
    hexed = [x.hex() if isinstance(x, bytes) else x for x in a]
    return [list(a[1]), list(a[2]), a[3], p._DTYPE_NAMES[a[5]], a[6], *hexed[7:10], *hexed[11:15]]


def rebuild(spec: list, device) -> torch.Tensor:
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    size, stride, offset, dtype, dev, handle, size_bytes, offset_bytes, rc, rc_offset, event, sync = spec
    raw = [bytes.fromhex(x) if isinstance(x, str) else x for x in (handle, rc, event)]
    return rebuild_cuda_tensor(torch.Tensor, torch.Size(size), tuple(stride), offset, torch.storage.TypedStorage,
                               p.DTYPES[dtype], dev, raw[0], size_bytes, offset_bytes, False, raw[1], rc_offset,
                               raw[2], sync)  # fmt: skip


def layout(inputs: list) -> Any:
    """The structure of one call's inputs with each tensor leaf replaced by its slot number."""
    counter = iter(range(1 << 30))
    return map_tensors(inputs, lambda t: {"slot": next(counter)})


def _fill(value: Any, views: list) -> Any:
    if isinstance(value, dict) and set(value) == {"slot"}:
        return views[value["slot"]]
    if isinstance(value, (list, tuple)):
        return type(value)(_fill(v, views) for v in value)
    return value


# --- runner side -----------------------------------------------------------------------------------


def open_slots(message: p.Attach, device) -> tuple[list, list, Any]:
    """Runner: map the judge's slots."""
    ins = [rebuild(spec, device) for spec in message.inputs]
    outs = [rebuild(spec, device) for spec in message.outputs]
    return ins, outs, _decode_layout(message.layout)


def _decode_layout(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"slot"} and isinstance(value["slot"], int):
        return value
    if isinstance(value, dict):
        return {k: _decode_layout(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_decode_layout(v) for v in value)
    return value


def run_batch(model, slots, count: int) -> None:
    """Runner: forward on input sets 0..count-1, each output copied into its slot."""
    ins, outs, shape = slots
    for k in range(count):
        got = tensor_leaves(model(*_fill(shape, [t[k] for t in ins])))
        if len(got) != len(outs):
            raise ValueError(f"forward returned {len(got)} tensors, expected {len(outs)}")
        for slot, value in zip(outs, got, strict=True):
            slot[k].copy_(value)


# --- judge side ------------------------------------------------------------------------------------


class Bench:
    """Both sides' slots and the batch procedures."""

    def __init__(self, state, reference, sample_inputs: list, sample_output: Any, count: int):
        self.state, self.reference, self.count = state, reference, count
        self.device = state.ctx.device
        self.shape = layout(sample_inputs)
        l2 = torch.cuda.get_device_properties(self.device).L2_cache_size
        self.scratch = torch.empty(max(L2_FLUSH_FACTOR * l2, 64 << 20), dtype=torch.int8, device=self.device)
        self.private_in, self.private_out = allocate_slots(sample_inputs, sample_output, count, self.device)
        self.pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(self.pool):  # exported segments hold the slots and nothing else
            self.shared_in, self.shared_out = allocate_slots(sample_inputs, sample_output, count, self.device)
        state.ask(p.Attach([export(t) for t in self.shared_in], [export(t) for t in self.shared_out], self.shape),
                  (p.Loaded,))  # fmt: skip

    def fresh_inputs(self) -> list[list]:
        return [self.reference.inputs(secrets.randbits(63)) for _ in range(self.count)]

    def _copy_in(self, slots: list, sets: list[list]) -> None:
        for k, inputs in enumerate(sets):
            for slot, leaf in zip(slots, tensor_leaves(inputs), strict=True):
                slot[k].copy_(leaf)

    def reference_batch(self, model, sets: list[list]) -> tuple[float, list]:
        return self._judge_batch(sets, lambda args: tensor_leaves(model(*args)))

    def empty_batch(self, sets: list[list], sample: list) -> float:
        """The same bracket without the forward (inputs in, a fixed output into each slot, outputs
        out): what both sides' brackets cost beyond their forwards, subtracted from both."""
        return self._judge_batch(sets, lambda args: sample)[0]

    def _judge_batch(self, sets: list[list], forward) -> tuple[float, list]:
        for t in self.private_out:
            t.view(torch.uint8).fill_(POISON)
        torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        self._copy_in(self.private_in, sets)
        self.scratch.zero_()  # evict the L2: every call reads its inputs from memory
        with torch.no_grad():
            for k in range(self.count):
                got = forward(_fill(self.shape, [t[k] for t in self.private_in]))
                for slot, value in zip(self.private_out, got, strict=True):
                    slot[k].copy_(value)
        kept = [t.clone() for t in self.private_out]
        torch.cuda.synchronize(self.device)
        return time.perf_counter() - start, kept

    def candidate_batch(self, sets: list[list]) -> tuple[float, list]:
        for t in self.shared_out:
            t.view(torch.uint8).fill_(POISON)
        torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        self._copy_in(self.shared_in, sets)
        self.scratch.zero_()
        torch.cuda.synchronize(self.device)
        self.state.ask(p.Batch(self.count), (p.BatchDone,))
        kept = [t.clone() for t in self.shared_out]
        torch.cuda.synchronize(self.device)
        return time.perf_counter() - start, kept


def check_batch(expected: list, got: list, rep: int) -> None:
    """Every output of a timed batch against the reference's on the same inputs (loose tolerance),
    a chunk at a time (compare.CHUNK_ELEMENTS), so that no float64 copy of a whole batch is made."""
    for m, (e, g) in enumerate(zip(expected, got, strict=True)):
        e_flat, g_flat = e.reshape(-1), g.reshape(-1)
        bad = 0
        for start in range(0, e_flat.numel(), compare.CHUNK_ELEMENTS):
            ec, gc = e_flat[start : start + compare.CHUNK_ELEMENTS], g_flat[start : start + compare.CHUNK_ELEMENTS]
            if ec.is_floating_point() or ec.is_complex():
                e64, g64 = ec.double(), gc.double()
                both_nan = torch.isnan(e64) & torch.isnan(g64)
                good = ((g64 - e64).abs() <= LOOSE_TOLERANCE * (1 + e64.abs())) | both_nan | (e64 == g64)
            else:
                good = ec == gc
            bad += int((~good).sum())
        if bad:
            raise Failure(
                Verdict.MISMATCH,
                f"During timing (batch {rep}, fresh inputs): {bad} of {e.numel()} elements of output {m} over "
                f"{e.shape[0]} calls differ from the reference's. The solution was correct on the trials but not "
                "here: its output depends on earlier calls (cached results?), was not finished when forward "
                "returned, or was not computed at all.",
            )


def _batch_size(state, reference, model, sample_inputs: list, sample_output: Any) -> int:
    per_set = sum(t.nbytes for t in tensor_leaves(sample_inputs)) + sum(t.nbytes for t in tensor_leaves(sample_output))
    fit = max(1, SLOT_BYTES // max(per_set, 1))
    with torch.no_grad():
        model(*clone(sample_inputs))
        torch.cuda.synchronize(state.ctx.device)
        args = clone(sample_inputs)
        start = time.perf_counter()
        model(*args)
        torch.cuda.synchronize(state.ctx.device)
    one = max(time.perf_counter() - start, 1e-6)
    wanted = int(min(MAX_BATCH, fit, max(1, math.ceil(TARGET_BATCH_S / one))))
    footprint = Footprint.of(reference.model, sample_inputs, sample_output, float64=False)
    return timing_batch(footprint, available_bytes(state.ctx.device), wanted)


def _baseline(reference, baseline: str, sample_inputs: list):
    if baseline == "eager":
        return reference.model
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1
    compiled = torch.compile(reference.model)
    with torch.no_grad():
        for _ in range(3):
            compiled(*sample_inputs)
    return compiled


def time_candidate(state, reference, trials: list) -> dict:
    job = state.job
    sample_inputs, sample_output = trials[0].inputs, trials[0].expected
    model = _baseline(reference, job.baseline, sample_inputs)
    count = _batch_size(state, reference, model, sample_inputs, sample_output)
    bench = Bench(state, reference, sample_inputs, sample_output, count)
    sets = bench.fresh_inputs()
    bench.reference_batch(model, sets), bench.candidate_batch(sets)  # warm-up (autotuning, caches)
    times: tuple[list[float], list[float]] = ([], [])
    sample = tensor_leaves(sample_output)
    began = time.perf_counter()
    rep = 0
    while True:
        sets = bench.fresh_inputs()
        outputs: list = [None, None]
        elapsed = [0.0, 0.0]
        for side in (0, 1) if rep % 2 == 0 else (1, 0):
            elapsed[side], outputs[side] = (
                bench.reference_batch(model, sets) if side == 0 else bench.candidate_batch(sets)
            )
        empty = bench.empty_batch(sets, sample)
        for side in (0, 1):
            times[side].append(max(elapsed[side] - empty, 1e-9) * 1e3 / count)
        rep += 1
        check_batch(outputs[0], outputs[1], rep)
        spent = time.perf_counter() - began
        if rep % timing.CHECK_BATCH == 0 or spent >= job.timing_budget_s:
            summary = timing.summarise(*times)
            stopped = timing.stop_reason(summary, job.timing_target, spent, job.timing_budget_s)
            if stopped:
                break
    result = {
        "speedup": round(summary.speedup, 4),
        "timing": {
            "baseline": job.baseline,
            "reference_ms": summary.reference_ms,
            "reference_ci_ms": list(summary.reference_ci_ms),
            "candidate_ms": summary.candidate_ms,
            "candidate_ci_ms": list(summary.candidate_ci_ms),
            "speedup_ci": [round(x, 4) for x in summary.speedup_ci],
            "spread": round(summary.spread, 4),
            "reps": summary.reps,
            "stopped": stopped,
            "input_sets": summary.reps * count,
            "flush_bytes": bench.scratch.numel(),
        },
    }
    bytes_read = sum(t.nbytes for t in tensor_leaves(sample_inputs))
    flag = timing.implausible(summary.candidate_ms, bytes_read, state.ctx.copy_bandwidth)
    if flag:
        result["findings"] = [{"check": "implausible_speedup", "message": flag}]
    return result


def profile_candidate(state, trials: list) -> dict:
    answer = state.ask(p.Profile(args=trials[0].inputs), (p.ProfileResult,))
    if answer.foreign_streams:
        names = ", ".join(map(str, answer.foreign_streams[:5]))
        raise Failure(
            Verdict.HACK_SIDE_STREAM,
            f"The profiled forward ran GPU work on another stream than the one it was called on ({names}); "
            "that work is outside the timed window. Launch everything on the current stream.",
        )
    try:
        kernels = [
            {"name": str(k["name"])[:200], "launches": int(k["launches"]), "time_us": float(k["time_us"]),
             "share": float(k["share"]), "own": bool(k["own"])}
            for k in answer.kernels[:200]
        ]  # fmt: skip
    except (TypeError, KeyError, ValueError):
        raise Failure(Verdict.CRASH, "The process broke the sandbox protocol during profiling.") from None
    coverage = None if answer.coverage < 0 else min(max(float(answer.coverage), 0.0), 1.0)
    return {"coverage": coverage, "kernels": kernels}


def speed_and_coverage(state, reference, trials: list) -> dict:
    """Timing and profiling of a correct candidate under this GPU's exclusive lock."""
    result: dict[str, Any] = {}
    with gpu_lock(state.ctx.gpu_lock, exclusive=True):
        if state.job.timing:
            with state.timed("timing"):
                result |= time_candidate(state, reference, trials)
        if state.job.profile:
            with state.timed("profiling"):
                result |= profile_candidate(state, trials)
    return result
