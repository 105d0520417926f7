"""Speed and coverage on a GPU, measured by the judge.

Timing never trusts the runner's clock: every bracket is timed by two CUDA events of the judge's,
on the judge's stream, around a batch of ``N`` calls on ``N`` fresh input sets (new secret seeds
every batch, integer inputs included). A repetition holds four brackets (``Bench`` says how each is
built): the reference's batch and the candidate's, in an order drawn in secret, then the two sides'
empty brackets (each its side's bracket without forwards). timing.py turns repetitions into a
speedup: what it subtracts from each side's bracket (one robust per-job estimate, bounded by what
the judge measured with nobody else on the GPU), which repetitions are measurements, the estimator
and when to stop.

* The candidate's inputs are copied into its slots after ``start``: nothing can work on them ahead
  of the clock. The slots are mapped by the runner (CUDA IPC, a memory pool of their own, so no
  other judge memory shares their segments); its stream waits on the judge's ``go`` event before its
  forwards run. The reference runs on the input sets themselves, in the judge's own memory, which
  no runner can read or write: the slots never hold the reference's inputs or outputs.
* Each output is copied into a slot of the candidate's own layout where that is dense (its runner's
  word from the trials, ``slot_specs``; contiguous where not): the copy is a plain one, as the
  twin's copies subtracted for it are, so no layout is charged and a false claim gains nothing.
* The candidate's outputs are copied out of the slots into the judge's memory before ``end``; the
  slots hold the poison byte before every batch, and every output of every batch is compared with
  the reference's on the same inputs after the clock stopped: an answer that was not finished
  inside the bracket, was cached, or was never computed shows up as poison or a wrong value. Where
  the reference changes its inputs in place, the input slots after the candidate's batch are compared
  with the reference's inputs after its forwards too (``check_inputs_after``).
* One call of a batch holds ``2 I + 3 O`` of the judge's GPU memory (memory.py): its input set and
  the slot it is copied into, the reference's output, the output slot and the copy out of it; a
  batch whose input sets take at most an eighth of the memory left (``STAGED_BYTES``) also holds
  them once more in the slots' own layout, so that a bracket copies them in with one copy per input
  leaf (``copy_sets``).
* Every bracket's work is queued while a hold keeps the judge's stream waiting until the host says
  the bracket is queued (holds.py: a flag in the judge's pinned memory, then a secret random part of
  ``holds.HOLD_JITTER_S``), so a bracket measures GPU time for both sides alike: neither the host's launch
  overhead nor the message round trip to the runner is in it. Work that waits for the GPU on the host
  (a ``.item()``, a synchronisation) is in it: the inputs exist only after the hold.
* After the inputs are copied in, every bracket writes four times the L2's size, so every call reads
  its inputs from memory; before ``end`` it writes the L2's size once more (the probe). Both are
  timed by events of their own: fixed workloads whose clean durations the judge measured when it
  started, under the exclusive lock (``calibrate_workloads``), and evidence of company only where
  the GPU timed them (``gpu_timed``: not the probe of a bracket closed after the runner's ``done``).

The candidate's bracket also holds the hand-off between the judge's CUDA context and the runner's
and back (the contexts are time-sliced: about 0.3 ms per batch on an H100). The judge's twin process
(twin.py), which never runs candidate code, closes the candidate's empty bracket in the runner's
place (the judge's copies, flush and probe, measured without anything of the runner's), and two
events of the judge's around the twin's part give its hand-off alone (``hand_off_us``). Switching
to the runner's context costs a little more than to the twin's (about 10 us a batch on an H200), so
each repetition also hands an empty batch to the runner itself, between two events of the judge's
(``runner_hand_off_us``): that is the hand-off subtracted. The runner can only make it slower:
what is subtracted for it is at most the twin's plus a small slack (timing.HAND_OFF_SLACK), and the
twin's at most the clean hand-off measured when the judge started (``clean_hand_off_us``, behind
holds jittered as the brackets' are) times a ceiling (timing.HAND_OFF_CEILING, above the twin's
hand-offs measured during honest jobs): a slower hand-off is charged to the candidate, never
credited. What none of this sees (the runner's context
starting cold after the switch) stays against the candidate, and ``N`` amortises it
(``TARGET_BATCH_S``; a fast candidate's batch is lengthened until its net time is several times
what is subtracted), as far as each side can queue its batch behind a hold (``queue_calls``: a
stream holds about a thousand pending operations, and a host that blocks on more makes every
bracket late).

Contention. The GPU time-slices its contexts, so work of another context (a runner's thread or
kernels it left queued between its forwards, another sandbox, another program) slows the judge's
brackets, and the reference's most of all: the candidate would look faster. Freezing the runner
does not help (a stopped process's queued kernels still run). Instead each repetition is checked
against the judge's own fixed workloads (flush, probe, hand-off): one much slower than clean had
company, and the repetition is repeated (``contended_reps``); when such repetitions outnumber the
valid ones, the result has no speedup and a ``timing_untrusted`` finding. The secret order and
hold jitter keep a runner from aiming its work between the probes. This GPU's lock (``gpu_lock``, a
System V semaphore no runner reaches: machine_lock.py) keeps the rest of ours off the GPU while a
candidate is timed: every other stage that runs GPU
work holds it shared, including a spare runner's start (``start_covered``) and a killed runner's end
(``end_covered``).

Coverage comes from one forward profiled in the runner (profiling.py): it is the runner's word.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import select
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tritongym.evaluate import compare, timing
from tritongym.evaluate.compare import LOOSE_TOLERANCE
from tritongym.evaluate.judge import machine_lock, timed_check
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.holds import Holds
from tritongym.evaluate.judge.memory import Footprint, available_bytes, give_back, nbytes, timing_batch
from tritongym.evaluate.judge.protocol import dense
from tritongym.evaluate.judge.shared_inputs import SharedInputs, inputs_message
from tritongym.evaluate.judge.tree import clone, tensor_leaves
from tritongym.evaluate.judge.twin import TwinGone, ensure_twin, wait_for
from tritongym.evaluate.judge.work_queues import LAUNCH_QUEUE_SCALE_ENV
from tritongym.evaluate.result import Verdict

TARGET_BATCH_S = 0.01
"""A batch lasts at least this long: the hand-off between the two CUDA contexts (about 0.3 ms on an
H100, measured and subtracted, but with some jitter) is amortised over it."""
MAX_BATCH = 512
SLOT_BYTES = 2 << 30
"""Most GPU memory for one side's slots (inputs and outputs of a batch); fewer calls where the GPU's
free memory cannot hold the batch (memory.timing_batch)."""
POISON = 0xFF
WARM_UP_REPS = 2
"""Untimed repetitions of the exclusive part before the measured ones (the batch ran once already in the
preparation, ``PREPARE_REPS``); the last says whether the batch must be longer (``grown_count``), and a
longer batch gets as many. Two, not one: on an H200 (session 14, the RL batch of 200 candidates in one
call) the speedups' intervals read 1.5% median and 8.3% p90 after one, 1.2% and 2.0% after two, at the
same seconds per candidate (BENCHMARKS.md)."""
PREPARE_REPS = 1
"""Untimed repetitions of the timing's preparation (under the shared hold): the first run of the batch
(the runner's mapped slots, caches, allocations, the first launches' compilation)."""
L2_FLUSH_FACTOR = 4
"""After the inputs are copied in, this many times the L2's size is written (in every bracket)."""
MAX_GROWN_BATCH = 4096
"""Most calls of a batch lengthened for a fast candidate (``timing.SIGNAL_FACTOR``)."""
QUEUED_OPS = 512
"""Most GPU operations (kernels, copies) one process queues on its stream for one bracket's first batch
(``queue_calls``); a batch lengthened for a fast candidate's signal (``grown_count``) may queue as many
as the launch queue holds (``queued_ops``: this times the queue's scale), at the cost of the host's time
to queue them in every hold. A CUDA stream holds about a thousand pending operations at the driver's
default (one-element launches on an H200; every GPU judge and runner gets four times that:
work_queues.LAUNCH_QUEUE_SCALE_ENV); past that the host blocks in every launch until the GPU has run
one, so no hold outlasts the host's launches: every bracket is late, at ``holds.MAX_HOLD_S`` counted with the
host's time in it (a single forward of more operations too: an A/A of 1,202 PyTorch launches a forward
read 0.39-0.43 at the default, BENCHMARKS.md). On an H200 the honest corpus's small problems (a few
microseconds a call, batches grown to thousands of calls) were timed at their host's launch rate or had
most repetitions contended ("slow: hand-off"); with this bound, none of 42 had a late bracket or a
contended repetition (BENCHMARKS.md)."""
LATE_SIDES = {"local": "reference", "remote": "candidate", "runner": "runner hand-off", "twin": "twin hand-off"}
"""Whose bracket a late one (its hold timed out: holds.py) of each hold's kind was: the reference's (or
its empty bracket), the candidate's (or the twin's empty bracket in its place), the runner's empty
hand-off, a company check's hand-off to the twin. Where one side
is late, only its reading holds host time; where both are, the two processes' rates of launches that
wait for the GPU are compared (34_VanillaRNNHidden's A/A 0.111-0.154: both, BENCHMARKS.md)."""
STAGED_BYTES = SLOT_BYTES
"""Most bytes of a batch's input sets staged in the slots' own layout (``Bench.staged``), and at most an
eighth of what the GPU has available: a larger batch copies its input sets into the slots call by call,
as before. A copy per call and leaf costs the host about 10 us to queue: a batch of hundreds of small
calls (``MAX_BATCH``) would spend milliseconds of every hold that covers the copies (the candidate's
bracket, the twin's, the runner's hand-off) on them, where one copy per leaf from the staged sets is a
few launches. The bundled problems' batches are 6-31 calls (``SLOT_BYTES`` bounds them): there it
saves little (BENCHMARKS.md, session 12)."""
MAX_BATCH_S = 0.1
"""A batch is not lengthened past this much of the reference's time."""
DEADLINE_RESERVE_S = 5.0
"""The timing's ceiling leaves this much of the job's timeout for what comes after it (profiling)."""


lock_waited = [0.0, 0.0]
"""Seconds this process has waited for this GPU's lock (``gpu_lock``), in all and for exclusive holds
(a job reads them before and after: its ``gpu_lock_wait`` and ``gpu_lock_wait_exclusive`` stages)."""
on_wait: Callable[[float], None] | None = None
"""Told the seconds of every wait for this GPU's lock (``gpu_lock``): the job in hand's
``JobState.extend`` (another job's hold is not the candidate's time); None between jobs."""
_exclusive: set[int] = set()
"""Locks this process holds exclusively (a job too large to share its GPU holds it for its whole
length; the stages' own uses of the lock inside that are no-ops)."""
_covers: dict[int, list[Cover]] = {}
"""Lock -> covers of GPU work outside a job's stages (a runner's start, a killed runner's end): see
``start_covered``, ``end_covered``."""
COVER_S = 10.0
"""The longest a cover keeps this GPU's lock shared, and timing waits for it (making a CUDA context
takes well under a second; a stopped or stuck spare does not hold the lock longer)."""
POLITE_AFTER_S = 0.1
"""An exclusive hold (a timing) that waited this long for this GPU's lock announces itself
(machine_lock.announce): from then on no judge's stage and no runner's start takes a new shared hold
until it had its turn, and it waits only for the holds already taken (and runners' ends). Shorter
waits let shared holds go ahead of it, as before: the stages of the other judges are not held up for
every timing, and a stream of them cannot keep a timing waiting for more than this and their length."""
covered = {"start": 0.0, "end": 0.0}
"""Seconds this process's covers held this GPU's lock shared, by kind (a runner's start, a killed
runner's end): a job reads them before and after (its ``gpu_lock_cover_start`` and
``gpu_lock_cover_end`` stages: covers that ended while it ran, whichever job they were for)."""
_kept: dict[int, Any] = {}
"""Lock -> the shared hold an exclusive one became when it ended (``gpu_lock(..., keep_shared=True)``),
kept until the job's runner is gone (``end_covered``) or the job ends (``let_go_kept``)."""


class Cover:
    """This GPU's lock held shared by a hold of its own (``release`` lets it go; None: inside this
    process's exclusive hold, nothing to hold) while some GPU work outside a job's stages goes on; a
    thread of its own lets it go as soon as ``over`` (which waits at most the seconds it is given)
    says that work is over, or after ``COVER_S``: an idle judge never keeps it."""

    def __init__(self, hold, over, kind: str):
        self.hold, self.over, self.kind = hold, over, kind
        self.began = time.perf_counter()
        self.released = threading.Event()
        self._guard = threading.Lock()
        threading.Thread(target=self._watch, name="tritongym-gpu-lock-cover", daemon=True).start()

    def _watch(self) -> None:
        with contextlib.suppress(Exception):
            self.over(COVER_S)
        self.release()

    def release(self) -> None:
        with self._guard:
            if self.released.is_set():
                return
            self.released.set()
        if self.hold is not None:
            self.hold()
            covered[self.kind] += time.perf_counter() - self.began


@contextlib.contextmanager
def gpu_lock(fd: int, exclusive: bool, keep_shared: bool = False):
    """This GPU's lock (``fd``: machine_lock.open_lock's answer), shared by every judge of this user on
    the machine: what runs work on the GPU outside timing holds it shared (the reference, the
    candidate's import, build, trials and guards, a runner's start and its end, the timing's
    preparation, which measures nothing), timing's measured repetitions and profiling hold it
    exclusively, so nothing else of ours runs on the GPU while a candidate is timed. A stage's shared
    hold is polite (machine_lock.take): it waits while an exclusive hold that waited
    ``POLITE_AFTER_S`` is announced. With ``keep_shared``, the exclusive hold becomes a shared one
    when it ends (machine_lock.downgrade), kept until the job's runner is gone (``end_covered``): no
    other judge's timing starts while the runner just timed ends. A no-op on the CPU (fd < 0) and
    inside an exclusive hold of the same lock; an exclusive hold first waits for the covered work to
    end (``settle``)."""
    asked = time.perf_counter()
    settle(fd, block=exclusive)
    if fd < 0 or fd in _exclusive:
        yield
        return
    if exclusive:
        release = machine_lock.take(fd, exclusive=True, timeout_s=POLITE_AFTER_S)
        if release is None:
            withdraw = machine_lock.announce(fd)
            try:
                release = machine_lock.take(fd, exclusive=True)
            finally:
                withdraw()
    else:
        release = machine_lock.take(fd, exclusive=False, polite=True)
    lock_waited[0] += time.perf_counter() - asked
    if on_wait is not None:
        on_wait(time.perf_counter() - asked)
    if exclusive:
        lock_waited[1] += time.perf_counter() - asked
        _exclusive.add(fd)
    try:
        yield
    finally:
        _exclusive.discard(fd)
        if exclusive and keep_shared:
            let_go_kept(fd)
            kept = machine_lock.downgrade(fd, release)
            if kept is not None:
                _kept[fd] = kept
        else:
            release()


def let_go_kept(fd: int) -> None:
    """Let go the shared hold an exclusive one became (``gpu_lock(..., keep_shared=True)``), if any."""
    kept = _kept.pop(fd, None)
    if kept is not None:
        kept()


def start_covered(fd: int, start, wait: bool = True) -> bool:
    """Call ``start``, which starts a runner and returns the judge's end of its socket (None: none
    was started), under this GPU's lock held shared by a hold of its own, and keep it until that
    runner said its first word (its Hello, sent once its CUDA context exists) or closed the socket
    (``settle``): a runner's start does not disturb another judge's timing, nor this one's. Inside
    this process's own exclusive hold nothing more is taken (that hold covers it). Without ``wait``,
    where another judge times now, nothing is started: returns whether it was."""
    if fd < 0:
        start()
        return True
    hold = None
    if fd not in _exclusive:
        hold = machine_lock.take(fd, exclusive=False, wait=wait, polite=True)
        if hold is None:
            return False
    sock = None
    try:
        sock = start()
    finally:
        if sock is None:
            if hold is not None:
                hold()
        else:
            _covers.setdefault(fd, []).append(Cover(hold, lambda timeout_s: _said(sock, timeout_s), "start"))
    return True


def end_covered(fd: int, end) -> None:
    """Call ``end``, which kills a runner and returns a function that says, waiting at most the
    seconds given, whether it is gone (its CUDA context with it); then hold this GPU's lock shared
    until it is: the hold the job's timing became (``gpu_lock(..., keep_shared=True)``), else a new
    one where no judge times now (the kill never waits for the lock: a runner that may keep the GPU
    busy ends at once; a timing it overlaps sees its company in its fixed workloads)."""
    over = end()
    if fd < 0 or fd in _exclusive:
        if fd >= 0:
            _covers.setdefault(fd, []).append(Cover(None, over, "end"))
        return
    hold = _kept.pop(fd, None) or machine_lock.take(fd, exclusive=False, wait=False)
    if hold is not None:
        _covers.setdefault(fd, []).append(Cover(hold, over, "end"))


def settle(fd: int, block: bool, timeout_s: float = COVER_S) -> None:
    """Forget the covers (``start_covered``, ``end_covered``) that let the lock go; with ``block``,
    first wait for each of the others, at most ``timeout_s``, then let it go anyway. Call it with
    ``block`` before reading a covered runner's first word, and before timing."""
    for cover in list(_covers.get(fd, ())):
        if block:
            cover.released.wait(timeout_s)
            cover.release()
        if cover.released.is_set():
            _covers[fd].remove(cover)


def _said(sock, timeout_s: float) -> bool:
    """Whether a runner said something on its socket or closed it (within ``timeout_s``)."""
    try:
        return bool(select.select([sock], [], [], timeout_s)[0])
    except (OSError, ValueError):  # its socket is closed already
        return True


def gone(pid: int, timeout_s: float) -> bool:
    """Whether a killed process has ended (gone, or a zombie: its CUDA context is torn down), waiting
    at most ``timeout_s`` for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    return True
        except (OSError, IndexError):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)


# --- slots and their export ----------------------------------------------------------------------


def _span(t: torch.Tensor) -> int:
    """Elements of storage one tensor of this shape and stride covers."""
    return 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True) if s > 0) if t.numel() else 0


CALL_ALIGN = 256
"""Bytes each call's element of a slot is aligned to (a multiple of the 16 bytes that vectorised loads
and Triton's pointer specialisation look for): the candidate's inputs in a slot are as aligned as the
reference's, which are tensors of their own."""


def slot_specs(inputs: list, outputs: Any, count: int, output_strides: Any = ()) -> tuple[list, list]:
    """(shape, stride, dtype) of ``count`` input and output slots: per tensor leaf one (count, ...)
    tensor whose element k has the leaf's shape and stride (inputs), or for outputs the strides given
    for it (``output_strides``, the candidate's own layout as its runner reported it) where they are
    dense (``dense``), else contiguous; each element starting ``CALL_ALIGN`` bytes after a multiple
    of it from the slot's start. An output slot in the candidate's layout costs it a plain copy per
    call, as the twin's copies that are subtracted for it (the twin copies from a tensor of the
    slot's own layout, speed.Bench): no layout is charged, and claiming another gains nothing."""

    def per_call(t: torch.Tensor, span: int) -> int:
        grain = max(CALL_ALIGN // t.element_size(), 1)
        return _round_up(max(span, 1), grain)

    def out_stride(k: int, t: torch.Tensor) -> tuple:
        given = output_strides[k] if isinstance(output_strides, (list, tuple)) and k < len(output_strides) else None
        if dense(tuple(t.shape), given):
            return tuple(given)
        return torch.empty(t.shape, device="meta").stride()

    ins = [((count, *t.shape), (per_call(t, _span(t)), *t.stride()), t.dtype) for t in tensor_leaves(inputs)]
    outs = [((count, *t.shape), (per_call(t, t.numel()), *out_stride(k, t)), t.dtype)
            for k, t in enumerate(tensor_leaves(outputs))]  # fmt: skip
    return ins, outs


class SharedArena:
    """The judge's buffers for the slots it shares with runners, kept for the judge's life.

    Memory exported to another process by CUDA IPC stays allocated until that process lets it go, and
    a runner killed at the end of its job never does (torch keeps such blocks aside for good): slots
    allocated per job would leak their size at every job. Every job's shared slots are carved out of
    buffers kept instead, one per part (``inputs``, ``outputs``), each of which grows only when a job
    needs more (the buffer it replaces is the only memory ever left behind). A trial's slots
    (shared_inputs.py) and a timing batch of one call on the same problem take the same places in
    the same buffers, so that a large problem's batch does not outgrow the buffers the trial's
    runner mapped (a small problem's first batch outgrows them once).
    Their memory pool of their own keeps anything else of the judge's out of the exported segments."""

    ALIGN = 512
    GRAIN = 64 << 20

    def __init__(self, device: torch.device):
        self.device = device
        self.pool: Any = None
        self.buffers: dict[str, torch.Tensor] = {}

    def carve(self, specs: list, part: str) -> list[torch.Tensor]:
        need = max(carved_bytes(specs, self.ALIGN), self.ALIGN)
        buffer = self.buffers.get(part)
        if buffer is None or buffer.numel() < need:
            self.buffers.pop(part, None)
            buffer = None
            if self.pool is None:
                self.pool = torch.cuda.MemPool()
            with torch.cuda.use_mem_pool(self.pool):
                self.buffers[part] = torch.empty(_round_up(need, self.GRAIN), dtype=torch.uint8, device=self.device)
        return carve_slots(self.buffers[part], specs, self.ALIGN)


def carved_bytes(specs: list, align: int) -> int:
    """Bytes of a buffer that ``carve_slots`` needs for these (shape, stride, dtype) specs."""
    return sum(_round_up(_storage_bytes(shape, stride, dtype), align) for shape, stride, dtype in specs)


def carve_slots(buffer: torch.Tensor, specs: list, align: int) -> list[torch.Tensor]:
    """Tensors of the given (shape, stride, dtype) laid out one after another in a uint8 ``buffer``,
    each starting at a multiple of ``align`` bytes, none overlapping another."""
    slots, offset = [], 0
    for shape, stride, dtype in specs:
        size = _round_up(_storage_bytes(shape, stride, dtype), align)
        piece = buffer[offset : offset + size].view(dtype)
        slots.append(torch.as_strided(piece, shape, stride))
        offset += size
    return slots


def slot_bytes(t: torch.Tensor) -> torch.Tensor:
    """The bytes a slot covers, as one uint8 tensor on its storage (a slot of one-element outputs has
    a stride of many elements between calls: no dtype view of it is contiguous)."""
    size = _storage_bytes(tuple(t.shape), tuple(t.stride()), t.dtype)
    offset = t.storage_offset() * t.element_size()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage(), offset, (size,), (1,))


def _storage_bytes(shape: tuple, stride: tuple, dtype) -> int:
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if any(s == 0 for s in shape):
        return itemsize
    return (1 + sum((s - 1) * st for s, st in zip(shape, stride, strict=True))) * itemsize


def _round_up(n: int, grain: int) -> int:
    return -(-n // grain) * grain


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
    """The structure of one call's inputs with each tensor leaf replaced by its slot number: its place
    in ``tensor_leaves`` order (a dict's entries by key, as tree.leaves walks them), the order the
    slots are made and filled in."""
    counter = iter(range(1 << 30))

    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return {"slot": next(counter)}
        if isinstance(value, (list, tuple)):
            return type(value)(walk(v) for v in value)
        if isinstance(value, dict):
            numbered = {k: walk(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
            return {k: numbered[k] for k in value}
        return value

    return walk(inputs)


def same_layout(a: Any, b: Any) -> bool:
    """Whether two layouts are the same, value for value and type for type (``True`` is not ``1``,
    nor ``1.0``; a NaN matches nothing): what equality of the values forward returned would
    not tell apart must still come as it was returned."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_layout(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        keys = [(type(k), k) for k in a]
        return keys == [(type(k), k) for k in b] and all(same_layout(a[k], b[k]) for k in a)
    return a is None or (type(a) in (bool, int, float, str) and a == b)


def fill(value: Any, views: list) -> Any:
    """A layout (``layout``) with each slot number replaced by its view."""
    if isinstance(value, dict) and set(value) == {"slot"} and isinstance(value["slot"], int):
        return views[value["slot"]]
    if isinstance(value, (list, tuple)):
        return type(value)(fill(v, views) for v in value)
    if isinstance(value, dict):
        return {k: fill(v, views) for k, v in value.items()}
    return value


# --- runner side -----------------------------------------------------------------------------------


def open_slots(message: p.Attach, device) -> tuple[list, list, Any]:
    """Runner: map the judge's slots: per input slot, each call's element as a tensor of its own
    (``own_calls``), and the output slots as they are (only the runner writes them)."""
    ins = [own_calls(rebuild(spec, device)) for spec in message.inputs]
    outs = [rebuild(spec, device) for spec in message.outputs]
    return ins, outs, _decode_layout(message.layout)


def own_storage(view: torch.Tensor) -> torch.Tensor:
    """``view`` (one call's element of a slot) as a tensor with a storage of its own over the same
    memory, no copy: the storage starts where ``view`` does (offset 0) and holds the bytes it spans, no
    more, as a freshly made input's does. Every slot is a view of one shared buffer, whose one storage
    would tell a forward that inspects storages (an aliasing check by
    ``x.untyped_storage().data_ptr()``, ``nbytes()``, ``storage_offset()``) that all its inputs are
    views of one larger tensor. The storage is made through DLPack (torch's own export of the bytes
    and import of them, ``from_blob``): its deleter holds the slot, so the shared buffer stays mapped
    as long as the tensor, or anything forward made of it, lives."""
    from torch.utils.dlpack import from_dlpack, to_dlpack

    nbytes = _span(view) * view.element_size()
    raw = torch.empty(0, dtype=torch.uint8, device=view.device)
    raw.set_(view.untyped_storage(), view.storage_offset() * view.element_size(), (nbytes,), (1,))
    storage = from_dlpack(to_dlpack(raw)).untyped_storage()
    return torch.empty(0, dtype=view.dtype, device=view.device).set_(storage, 0, view.shape, view.stride())


def own_calls(slot: torch.Tensor) -> list[torch.Tensor]:
    """Each call's element of an input slot as a tensor of its own (``own_storage``), made once when
    the slots are mapped: handing one to a call (``handed``) costs no more than indexing the slot."""
    return [own_storage(slot[k]) for k in range(slot.shape[0])]


def handed(ins: list, k: int) -> list[torch.Tensor]:
    """Call ``k``'s input tensors as forward is handed them: a new tensor on each one's own storage
    (``detach``: not a view, ``_base`` None), so that what one forward does to the tensor object it
    was handed (``set_``, ``resize_``, a transpose in place) is not what the next call is handed."""
    return [calls[k].detach() for calls in ins]


def _decode_layout(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"slot"} and isinstance(value["slot"], int):
        return value
    if isinstance(value, dict):
        return {k: _decode_layout(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_decode_layout(v) for v in value)
    return value


def staged_buffer(specs: list, device, available: int) -> list[torch.Tensor] | None:
    """Tensors of the input slots' (shape, stride, dtype) specs, laid out as ``carve_slots`` lays the
    slots out, in a buffer of the judge's own that starts zeroed (the gaps between calls, which no
    copy writes, never hold judge memory: the slots they are copied into are the runner's to read);
    None where they would take more than ``STAGED_BYTES`` or an eighth of ``available``."""
    need = carved_bytes(specs, SharedArena.ALIGN)
    if not specs or need > min(STAGED_BYTES, available // 8):
        return None
    return carve_slots(torch.zeros(max(need, 1), dtype=torch.uint8, device=device), specs, SharedArena.ALIGN)


def stage_sets(staged: list[torch.Tensor], sets: list[list]) -> None:
    """Each call's input leaves into its place in the staged tensors (``staged_buffer``)."""
    for k, inputs in enumerate(sets):
        for slot, leaf in zip(staged, tensor_leaves(inputs), strict=True):
            slot[k].copy_(leaf)


def copy_sets(slots: list[torch.Tensor], sets: list[list], staged: list[torch.Tensor] | None) -> None:
    """The input sets into the input slots: from ``staged`` (holding these sets in the slots' own
    layout) one copy of each slot's bytes, else call by call and leaf by leaf."""
    if staged is not None:
        for slot, source in zip(slots, staged, strict=True):
            slot_bytes(slot).copy_(slot_bytes(source))
        return
    for k, inputs in enumerate(sets):
        for slot, leaf in zip(slots, tensor_leaves(inputs), strict=True):
            slot[k].copy_(leaf)


def run_batch(model, slots, count: int) -> None:
    """Runner: forward on input sets 0..count-1, each output copied into its slot."""
    ins, outs, shape = slots
    for k in range(count):
        got = tensor_leaves(model(*fill(shape, handed(ins, k))))
        if len(got) != len(outs):
            raise ValueError(f"forward returned {len(got)} tensors, expected {len(outs)}")
        for slot, value in zip(outs, got, strict=True):
            slot[k].copy_(value)


# --- judge side ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bracket:
    """One timed bracket (seconds): all of it, and the judge's two fixed workloads in it, each 0 where
    the GPU did not time it (``gpu_timed``): then it says nothing about company, as a company check
    whose hold ended first."""

    seconds: float
    flush_s: float
    """The L2 flush after ``start`` (its calibrated clean duration: ``WorkerContext.flush_s``)."""
    probe_s: float
    """The probe just before ``end`` (clean: ``WorkerContext.probe_s``)."""


def gpu_timed(first) -> bool:
    """Whether the workload queued after the event ``first`` (recorded just before it) is timed by
    the GPU: ``first`` had not fired when the workload's last part was queued, so the GPU met the
    work already queued. Where it had fired, the GPU had caught up with the host (the end of a
    candidate's bracket, queued only once the judge saw ``done``; any bracket of a forward that
    waits for the GPU on the host) and the events around the workload time the host's launch of it
    and whatever delayed the host: 40-140 us for a probe of 22 us on an H200, which read as company."""
    return not first.query()


def workload_bytes(device) -> tuple[int, int]:
    """Bytes the flush and the end probe of every bracket write: ``L2_FLUSH_FACTOR`` times the L2
    (at least 64 MiB), and the L2's size (at least 8 MiB)."""
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    return max(L2_FLUSH_FACTOR * l2, 64 << 20), max(l2, 8 << 20)


def calibrate_workloads(device, holds: Holds, reps: int = 21) -> tuple[float, float]:
    """The flush's and the probe's clean durations (seconds, medians), measured when the judge
    starts, under this GPU's exclusive lock and before any candidate ran: each behind a hold
    (``holds``), as a bracket's are, so that its events time the GPU's work and not the host's launch
    of it (``gpu_timed``: on an idle GPU they read 84 us for a flush of 77 us, 28 us for a probe of
    22 us on an H200)."""
    flush, probe = workload_bytes(device)
    scratch = torch.empty(flush, dtype=torch.int8, device=device)
    durations: tuple[list[float], list[float]] = ([], [])
    for rep in range(reps + 1):  # the first of each is a warm-up
        for k, size in enumerate((flush, probe)):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            hold = holds.open()
            start.record()
            scratch[:size].zero_()
            end.record()
            timed = gpu_timed(start)
            holds.release(hold)
            end.synchronize()
            late = holds.settle(hold)
            if rep and timed and not late:
                durations[k].append(start.elapsed_time(end) / 1e3)
    del scratch
    return statistics.median(durations[0] or [0.0]), statistics.median(durations[1] or [0.0])


@dataclass
class Opened:
    """A bracket opened (``Bench._open``): its events (start, flush start, flush end, probe start, end),
    whether the GPU timed the flush (``gpu_timed``), its hold's kind and word (holds.py)."""

    events: list
    flush_timed: bool
    kind: str
    hold: int


class Bench:
    """The slots of a batch and the four brackets of a repetition, each timed on the judge's stream.

    A bracket opens with a hold (holds.py: the judge's stream waits on a flag of the judge's), then
    ``start`` and the L2 flush; it closes with ``end``, both events of the judge. Everything in between
    is queued on the host while the hold keeps the GPU waiting, and the host releases the hold once
    it is (for the candidate's bracket: once the runner answered ``BatchQueued``), so the bracket
    measures GPU time, not the host's launch overhead or the message round trip. A hold that timed
    out (``holds.MAX_HOLD_S``: the host could not queue its bracket in that long) makes its bracket *late*:
    it counts as it is, its host time included (``late``, ``late_by``). A runner that answers
    ``BatchQueued`` early leaves its own launches to be made inside its bracket (its time); one that
    answers late only lengthens the hold, outside the bracket.

    * reference: the reference's forwards on the batch's input sets themselves (the judge's own
      memory, which no runner maps; a copy of them where the reference changes its inputs in place),
      each output kept as it is returned.
    * candidate: after ``start`` the input sets are copied into the slots the runner maps; after the
      flush the judge records the shared ``go`` event and sends ``Batch``; the runner's stream waits
      on ``go``, runs the forwards, copies each output into its slot, records ``done`` and answers
      ``BatchQueued``. The judge releases the hold, polls ``done`` from the host (a runner whose
      context dies never fires it: the job's deadline ends the wait; the judge's stream never waits
      on an event of the runner's) and then queues the copy of the output slots into its own memory
      and ``end``.
    * two empty brackets, each its side's bracket without forwards, subtracted from it: the
      reference's holds the flush alone; the candidate's is closed by the judge's twin in the
      runner's place, with the same copies (an output of the slot's own layout, the candidate's
      last, copied into each slot: the cheapest copy into it, never costlier than the runner's copy
      of the candidate's output, whatever layout that has). Two more events of
      the judge's around the twin's go and done measure the hand-off alone.

    What one call holds (memory.TIMING_BYTES_PER_CALL): its input set and the slot it is copied
    into; the reference's output, the output slot and the copy out of it; and the input set's copy
    where the reference mutates its inputs. The slots hold nothing of the reference's.
    """

    def __init__(self, state, reference, sample_inputs: list, sample_output: Any, count: int, mutates: bool,
                 persistent: bool = False):  # fmt: skip
        self.state, self.reference, self.count, self.mutates = state, reference, count, mutates
        # the reference returns memory of its own that its next call overwrites (outputs_persist): each
        # output is copied as it comes, and as many copies are made in its empty bracket
        self.persistent = persistent
        self.device = state.ctx.device
        self.shape = layout(sample_inputs)
        flush, self.probe_bytes = workload_bytes(self.device)
        self.scratch = torch.empty(flush, dtype=torch.int8, device=self.device)
        specs_in, specs_out = slot_specs(sample_inputs, sample_output, count, state.output_strides)
        self.shared_in = state.ctx.arena.carve(specs_in, "inputs")
        self.shared_out = state.ctx.arena.carve(specs_out, "outputs")
        self.kept = [torch.empty_strided(shape, stride, dtype=dtype, device=self.device)
                     for shape, stride, dtype in specs_out]  # fmt: skip
        self.staged = staged_buffer(specs_in, self.device, available_bytes(self.device))
        """The batch's input sets in the input slots' own layout, in the judge's memory (None: too large,
        ``STAGED_BYTES``): each bracket that copies them in copies each slot's bytes at once (one copy per
        input leaf, not one per call and leaf: ``copy_sets``), so holds need not cover a copy per call."""
        self.staged_sets: list | None = None
        """The input sets ``staged`` holds now (``fresh_inputs``' last)."""
        self.inputs_after: list | None = None
        """Where the reference changes its inputs in place (``mutates``): its last batch's input sets after
        its forwards, which the candidate's inputs in the slots after its batch are checked against
        (``check_inputs_after``)."""
        self.go = torch.cuda.Event(interprocess=True)
        self.done = torch.cuda.Event(interprocess=True)
        self.twin = ensure_twin(state.ctx)
        self.holds = Holds(state.ctx.sleep_rate)
        """The brackets' holds (their flag words: pinned memory of the judge's, which no runner maps)."""
        self.late = 0
        self.late_by: dict[str, int] = {}
        """``late`` by the side whose bracket it was (``LATE_SIDES``): where the host time counted."""
        self.untimed = 0
        """Untimed repetitions so far (``warm_up``)."""
        self.check_s = 0.0
        """Seconds spent checking the outputs so far (``check_batch``, its read of the GPU included)."""
        self.inputs_s = 0.0
        """Seconds spent making fresh input sets so far (``fresh_inputs``: the host's part, the GPU's runs
        behind it)."""
        events = [self.go.ipc_handle().hex(), self.done.ipc_handle().hex()]
        state.ask(p.Attach([export(t) for t in self.shared_in], [export(t) for t in self.shared_out], self.shape,
                           events), (p.Loaded,))  # fmt: skip

    def fresh_inputs(self) -> list[list]:
        """``count`` input sets from new secret seeds, each as the problem makes it."""
        began = time.perf_counter()
        sets = [self.reference.inputs(secrets.randbits(63)) for _ in range(self.count)]
        if self.staged is not None:  # before any hold: the GPU's copies run outside the brackets
            stage_sets(self.staged, sets)
            self.staged_sets = sets
        self.inputs_s += time.perf_counter() - began
        return sets

    def _open(self, kind: str, sets: list[list] | None) -> Opened:
        """Hold, ``start``, the input sets copied into the shared slots (``None``: no copy), the
        flush between two events."""
        if sets is not None:
            for t in self.shared_out:
                slot_bytes(t).fill_(POISON)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(5)]
        hold = self.holds.open()
        events[0].record()
        if sets is not None:
            copy_sets(self.shared_in, sets, self.staged if sets is self.staged_sets else None)
        events[1].record()
        self.scratch.zero_()  # evict the L2: every call reads its inputs from memory
        events[2].record()
        return Opened(events, gpu_timed(events[1]), kind, hold)

    def _close(self, opened: Opened) -> Bracket:
        """The probe between two events, ``end``, the hold released (where it was not yet: a local
        bracket's is once ``end`` is queued), and wait for it. The flush and the probe are 0 where the
        GPU did not time them (``gpu_timed``): a remote bracket's probe is queued after ``done`` fired,
        mostly on an idle GPU."""
        start, flush_start, flush_end, probe_start, end = opened.events
        probe_start.record()
        self.scratch[: self.probe_bytes].zero_()
        end.record()
        probe_timed = gpu_timed(probe_start)
        self.holds.release(opened.hold)
        end.synchronize()
        self._settle(opened.kind, opened.hold)
        flush = flush_start.elapsed_time(flush_end) / 1e3 if opened.flush_timed else 0.0
        probe = probe_start.elapsed_time(end) / 1e3 if probe_timed else 0.0
        return Bracket(start.elapsed_time(end) / 1e3, flush, probe)

    def _settle(self, kind: str, hold: int) -> bool:
        """Whether a hold of this kind timed out (its work has finished): then its bracket was late."""
        late = self.holds.settle(hold)
        if late:
            self.late += 1
            side = LATE_SIDES.get(kind, kind)
            self.late_by[side] = self.late_by.get(side, 0) + 1
        return late

    def reference_batch(self, model, sets: list[list]) -> tuple[Bracket, list[list]]:
        """The reference's forwards on the input sets (a copy of them where it mutates its inputs, so
        that the candidate gets them as made); each call's output leaves, kept as returned."""
        given = clone(sets) if self.mutates else sets
        opened = self._open("local", None)
        outputs = []
        with torch.no_grad():
            for args in given:
                leaves = tensor_leaves(model(*fill(self.shape, tensor_leaves(args))))
                outputs.append([t.clone() for t in leaves] if self.persistent else leaves)
        self.inputs_after = given if self.mutates else None
        return self._close(opened), outputs

    def empty_batch(self) -> Bracket:
        """The reference's bracket without its forwards (with its copies, where it makes them)."""
        opened = self._open("local", None)
        copies = [[t[-1].clone() for t in self.kept] for _ in range(self.count)] if self.persistent else []
        elapsed = self._close(opened)
        del copies
        return elapsed

    def _poll(self, event) -> None:
        try:
            wait_for(event, self.state.deadline)
        except TimeoutError:
            raise Failure(Verdict.TIMEOUT, f"Timed out after {self.state.job.timeout_s:g} s during timing.") from None

    def _copy_out(self) -> None:
        for kept, slot in zip(self.kept, self.shared_out, strict=True):
            kept.copy_(slot)

    def candidate_batch(self, sets: list[list]) -> tuple[Bracket, list]:
        """The runner's forwards on the shared slots; the outputs as copied out of the slots inside
        the bracket (per leaf, one tensor of ``count`` calls; overwritten by the next bracket). The
        hold is released once the runner said its batch is queued."""
        opened = self._open("remote", sets)
        self.go.record()
        self.state.ask(p.Batch(self.count), (p.BatchQueued,))
        self.holds.release(opened.hold)
        self._poll(self.done)
        self._copy_out()
        return self._close(opened), self.kept

    def remote_empty_batch(self, sets: list[list]) -> tuple[Bracket, float, bool]:
        """The candidate's bracket with the twin in the runner's place and no forwards: the judge
        copies an output of the slot's layout (the candidate's last, kept) into each slot, the twin
        waits on ``go`` and records ``done``; the hold is released once the twin said so. Returns the
        bracket, the hand-off alone (between two events of the judge's around the twin's go and done)
        and whether the GPU timed it (``gpu_timed``: ``handed`` had not fired when the twin had queued
        its wait; a late bracket's may hold the host's round trip to the twin)."""
        opened = self._open("remote", sets)
        for kept, slot in zip(self.kept, self.shared_out, strict=True):
            for k in range(self.count):
                slot[k].copy_(kept[-1])
        handed, back = self._hand_to_twin()
        timed = gpu_timed(handed)
        self.holds.release(opened.hold)
        self._poll(self.twin.done)
        back.record()
        self._copy_out()
        return self._close(opened), handed.elapsed_time(back) / 1e3, timed

    def runner_hand_off(self, sets: list[list]) -> float:
        """The hand-off to the runner's context and back with nothing in between (seconds), where the
        candidate's bracket has it: behind a hold of its kind, the input sets copied into the slots
        again and the flush, then ``go``; the runner's stream waits on it and records ``done`` (an
        empty ``Batch``), the hold is released once it answered, and the judge records ``back`` once
        ``done`` fired. The runner's context costs more to switch to than the twin's (0-17 us a batch
        on an H200), and a hand-off depends on the judge's work before ``go`` (twin.calibrate), so it
        is measured behind the same work as in the candidate's bracket: this, not the twin's, is what
        that bracket pays. The runner can only make it slower; what is subtracted for it is capped by
        the twin's (timing.subtracted). 0 where the GPU did not time it (``gpu_timed``: ``handed`` had
        fired before the runner answered, so the events hold the host's round trip to the runner: the
        hold timed out)."""
        opened = self._open("runner", sets)
        handed, back = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        handed.record()
        self.go.record()
        self.state.ask(p.Batch(0), (p.BatchQueued,))
        timed = gpu_timed(handed)
        self.holds.release(opened.hold)
        self._poll(self.done)
        back.record()
        back.synchronize()
        self._settle("runner", opened.hold)
        return handed.elapsed_time(back) / 1e3 if timed else 0.0

    def company_check(self) -> float:
        """A hand-off to the twin and back right after a bracket, outside it (seconds): the contexts
        are time-sliced, so where another context has work (a runner's thread, kernels it left
        queued), the twin waits for that one's time slice and the hand-off is much slower than clean
        (timing.contention). Queued behind a hold of its own, as the calibration's (twin.calibrate)
        and the remote brackets' are, released once the twin queued its part, so that the twin's host
        round trip is not in it; where the hold timed out first, this check says nothing (0)."""
        hold = self.holds.open()
        handed, back = self._hand_to_twin()
        self.holds.release(hold)
        self._poll(self.twin.done)
        back.record()
        back.synchronize()
        late = self._settle("twin", hold)
        return handed.elapsed_time(back) / 1e3 if not late else 0.0

    def _hand_to_twin(self):
        """Record ``handed`` and the twin's ``go`` on the judge's stream and have the twin queue its
        wait and ``done``; returns ``handed`` and the event to record once ``done`` fired."""
        handed, back = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        handed.record()
        self.twin.go.record()
        try:
            self.twin.hand_off()
        except TwinGone:  # started again for the next job (ensure_twin)
            if self.state.runner.uid:  # a runner of a user of its own cannot signal it: the judge's failure
                raise
            raise Failure(
                Verdict.CRASH,
                "The judge's timing process was killed while this solution was being timed; only a process of the "
                "judge's user can do that, and the solution's runner is one. Do not signal other processes.",
            ) from None
        return handed, back


def sleep_rate() -> float:
    """Cycles per second of ``torch.cuda._sleep`` on this GPU (measured, the clock varies)."""
    rate = 0.0
    for _ in range(2):  # the first one loads the kernel
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        rate = 1_000_000 / max(start.elapsed_time(end) / 1e3, 1e-6)
    return rate


TIMED_SLACK = 4.0
"""How many times the trials' bound (compare.timed_bound) a timed call's error against the reference's
output may be: the timed inputs are other draws of the same distribution, and PyTorch's own error
moves with them. A candidate that computes at a lower precision than in its trials (TF32, bf16 or fp16
for a float32 problem: about 2^13 to 2^16 times PyTorch's error, against the trials' 32) is over it."""


def check_batch(expected: list[list], got: list, rep: int, bounds: list | None = None) -> None:
    """Every output of a timed batch against the reference's on the same inputs: ``expected`` holds
    each call's output leaves, ``got`` per leaf one tensor of all the calls. Over the loose tolerance
    (as in the trials: ``LOOSE_TOLERANCE`` relative to the element plus the output's RMS over the
    calls, :func:`_rms`) is a ``mismatch``; over ``TIMED_SLACK`` times the trials' bound for that output (``bounds``: a
    fraction of the largest magnitude among the calls compared together; None: no bound but the loose
    one) a ``precision`` (red team 13 #2: a solution that multiplied in bf16 once its trials were over
    passed the loose check and was timed at bf16's speed). Where the reference's element is inf or NaN,
    the same, or any finite value, passes (``_accepted``). The counts come from ``check_counts``, read
    from the GPU once for the whole batch; the first output that failed (a mismatch before a precision)
    is named."""
    found = check_counts(expected, got, bounds)
    for m, (bad_n, imprecise_n) in enumerate(found.tolist() if found is not None else []):
        g = got[m]
        if bad_n:
            raise Failure(
                Verdict.MISMATCH,
                f"During timing (batch {rep}, fresh inputs): {bad_n} of {g.numel()} elements of output {m} over "
                f"{len(expected)} calls differ from the reference's. The solution was correct on the trials but not "
                "here: its output depends on earlier calls (cached results?), was not finished when forward "
                "returned, or was not computed at all.",
            )
        if imprecise_n:
            bound = bounds[m]
            raise Failure(
                Verdict.PRECISION,
                f"During timing (batch {rep}, fresh inputs): {imprecise_n} of {g.numel()} elements of output {m} "
                f"over {len(expected)} calls are further from the reference's than the trials allowed "
                f"({TIMED_SLACK:g} x {bound:.3g} of the output's largest magnitude): the timed calls computed at a "
                "lower precision than the trials (TF32, bf16 or fp16 arithmetic for a float32 problem?). Compute "
                "every call as the trials were computed.",
            )


def check_inputs_after(expected: list[list], got: list, rep: int) -> None:
    """Where the reference changes its inputs in place, the candidate's inputs after a timed batch (``got``,
    per input leaf one tensor of all the calls: the input slots) against the reference's after its
    forwards on the same sets (``expected``, each call's input leaves), to the loose bound (``check_counts``):
    the trials compare the inputs after forward, and a timed batch that checked only the outputs let a
    solution that tells timed calls apart leave the change undone there (red team 20 #3)."""
    found = check_counts(expected, got)
    for m, (bad_n, _) in enumerate(found.tolist() if found is not None else []):
        if bad_n:
            raise Failure(
                Verdict.MISMATCH,
                f"During timing (batch {rep}, fresh inputs): {bad_n} of {got[m].numel()} elements of input {m} "
                f"after forward over {len(expected)} calls differ from the reference's inputs after its forward. "
                "The solution changed its inputs in place as the reference does in the trials but not here: change "
                "them in every call.",
            )


def check_counts(expected: list[list], got: list, bounds: list | None = None) -> torch.Tensor | None:
    """``check_batch``'s counts, per output (its elements over the loose bound, and over the precision
    bound), as one (outputs, 2) int64 tensor on the outputs' device, never synchronised (None: no
    output). Per group of calls (as many calls' outputs as fit in ``compare.CHUNK_ELEMENTS``, stacked,
    or one call's alone) a real floating, integer or boolean output is counted by one launch of
    timed_check.py's Triton kernel (in float64 there, exactly the rule the torch operations had: their
    49 launches per chunk were half of the check's time, BENCHMARKS.md, session 13); the output's RMS
    (``_rms``) and the group's largest magnitude (``_largest``) come from torch first. A complex output
    is still compared with torch operations, a chunk at a time."""
    if not got:
        return None
    counts = torch.zeros((len(got), 2), dtype=torch.int64, device=got[0].device)
    for m, g in enumerate(got):
        bound = bounds[m] if bounds is not None and m < len(bounds) else None
        group = max(1, compare.CHUNK_ELEMENTS // max(g[0].numel(), 1))
        rms = _rms([call[m] for call in expected]) if g.is_floating_point() or g.is_complex() else None
        loose = timed_check.loose_tolerance(g.device, LOOSE_TOLERANCE) if g.is_floating_point() else None
        for first in range(0, len(expected), group):
            last = min(first + group, len(expected))
            # a call alone is not copied (its output may be most of the GPU): reshaped where it can be
            e = torch.stack([expected[k][m] for k in range(first, last)]) if last - first > 1 else expected[first][m]
            e_flat, g_flat = e.reshape(-1), g[first:last].reshape(-1)
            scale = _largest(e_flat) if bound is not None and bound < math.inf else None
            if not e_flat.is_complex():
                threshold = scale * (TIMED_SLACK * bound) if scale is not None else None
                timed_check.count_into(counts[m], e_flat.contiguous(), g_flat.contiguous(), rms, loose, threshold)
                continue
            for start in range(0, e_flat.numel(), compare.CHUNK_ELEMENTS):
                ec = e_flat[start : start + compare.CHUNK_ELEMENTS]
                gc = g_flat[start : start + compare.CHUNK_ELEMENTS]
                accepted = _accepted(ec, gc, torch.isfinite(ec))
                e64, g64 = ec.to(torch.complex128), gc.to(torch.complex128)  # ``double()`` drops the imaginary part
                error = (g64 - e64).abs()
                counts[m, 0] += (
                    ~(((error <= LOOSE_TOLERANCE * (e64.abs() + rms)) & torch.isfinite(ec)) | accepted)
                ).sum()
                if scale is not None:
                    counts[m, 1] += (~((error <= TIMED_SLACK * bound * scale) | accepted)).sum()
    return counts


def _accepted(expected: torch.Tensor, got: torch.Tensor, finite: torch.Tensor) -> torch.Tensor:
    """Elements of a timed call's output (a chunk of it) that pass whatever their error: equal to the
    reference's (NaN where it has NaN, or the same infinity), or finite where the reference's is not.
    The trials judge a finite value where PyTorch's result at the problem's dtype is inf or NaN against
    the float64 result, since PyTorch may have overflowed where float64 did not (compare.py: an fp16 sum of
    squares past 65504, an honest kernel that accumulates in fp32 gives the finite answer); the timed
    check has no float64 result to tell that from a true infinity. Any other non-finite value where the
    reference's is non-finite is wrong (the other infinity, NaN for an infinity): its error against an
    infinite element is no measure (red team 20 #1: ``inf <= inf`` passed the loose bound, and an
    infinite bound let it through). ``finite``: where ``expected`` is finite."""
    same = (expected == got).logical_or_(torch.isnan(expected).logical_and_(torch.isnan(got)))
    return same.logical_or_(torch.isfinite(got).logical_and_(finite.logical_not()))


def _finite(t: torch.Tensor) -> torch.Tensor:
    """``t`` (real) with every non-finite element 0, in its own dtype."""
    return torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0)


def _rms(outputs: list[torch.Tensor]) -> torch.Tensor:
    """The RMS of the finite elements of one output over the calls (a float64 scalar on its device,
    never synchronised; at least the dtype's smallest normal), ``CHUNK_ELEMENTS`` at a time (as many
    calls' outputs as fit, concatenated: a few kernels per batch, not a few per call; each chunk's
    squares summed in float64 by ``vector_norm``, without a float64 copy): the scale
    the trials' loose check (compare.py) measures an element's error against beside the element's own
    magnitude. A bound of one unit instead (the check's before session 11) failed Inductor's honest
    code of Mamba2 (48, 49: outputs from ``exp`` of cumulative sums, most elements far larger than 1,
    a few hundred near 0 with float32's error of their large neighbours) and passed any error of an
    output a million times smaller than 1."""
    device = outputs[0].device
    squares = torch.zeros((), dtype=torch.float64, device=device)
    count, group, grouped = 0, [], 0

    def add(flats: list[torch.Tensor]) -> None:
        flat = torch.cat(flats) if len(flats) > 1 else flats[0]
        for start in range(0, flat.numel(), compare.CHUNK_ELEMENTS):
            chunk = _finite(flat[start : start + compare.CHUNK_ELEMENTS])
            squares.add_(torch.linalg.vector_norm(chunk, 2, dtype=torch.float64).square())

    for output in outputs:
        flat = output.reshape(-1) if not output.is_complex() else torch.view_as_real(output).reshape(-1)
        if group and grouped + flat.numel() > compare.CHUNK_ELEMENTS:
            add(group)
            group, grouped = [], 0
        group.append(flat)
        grouped += flat.numel()
        count += flat.numel()
    if group:
        add(group)
    return (squares / max(count, 1)).sqrt().clamp_min(torch.finfo(outputs[0].dtype).tiny)


def _largest(flat: torch.Tensor) -> torch.Tensor:
    """The largest finite magnitude among ``flat``'s elements (0 for none), in float64, as a scalar
    tensor on its device (never synchronised; exact: a maximum, in the elements' own dtype)."""
    if not flat.numel():
        return torch.zeros((), dtype=torch.float64, device=flat.device)
    values = flat if not flat.is_complex() else torch.view_as_real(flat)
    if not values.is_floating_point():  # integers and booleans: every element is finite
        return values.double().abs().max()
    return torch.linalg.vector_norm(_finite(values), math.inf).double()


def outputs_persist(model, sample_output: Any, sample_inputs: list) -> bool:
    """Whether the model returns memory of its own that its next call overwrites (a buffer it writes
    every call): called once more while ``sample_output`` (its last output) is alive, it returns some
    of the same storage again. An output that is (a view of) an input is not such memory: every timed
    call has input sets of its own."""
    with torch.no_grad():
        again = tensor_leaves(model(*sample_inputs))
    inputs = {t.untyped_storage().data_ptr() for t in tensor_leaves(sample_inputs)}
    before = {t.untyped_storage().data_ptr() for t in tensor_leaves(sample_output) if t.numel()} - inputs
    return any(t.numel() and t.untyped_storage().data_ptr() in before for t in again)


def _batch_size(state, model, sample_inputs: list, footprint: Footprint, sample_bytes: int,
                queue: int = MAX_BATCH) -> tuple[int, float]:  # fmt: skip
    """Calls per batch: enough for ``TARGET_BATCH_S`` of the reference's time, as many as each side
    can queue behind a hold (``queue``: ``queue_calls``) and as fit in memory (memory.timing_batch),
    counting the sample's own memory as available: it is dropped before the batch's input sets are
    made. Also returns the reference's time of one call (s)."""
    fit = max(1, SLOT_BYTES // max(sample_bytes, 1))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        model(*sample_inputs)
        torch.cuda.synchronize(state.ctx.device)
        start.record()
        for _ in range(3):
            model(*sample_inputs)
        end.record()
        end.synchronize()
    one = max(start.elapsed_time(end) / 3e3, 1e-7)
    wanted = int(min(MAX_BATCH, fit, queue, max(1, math.ceil(TARGET_BATCH_S / one))))
    return timing_batch(footprint, available_bytes(state.ctx.device) + sample_bytes, wanted), one


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


def clean_workloads(ctx) -> timing.Clean:
    """The judge's fixed workloads as calibrated when it started (judge.warm_up)."""
    return timing.Clean(ctx.flush_s, ctx.probe_s, ctx.hand_off_s)


def repetition(bench: Bench, model, rep: int, candidate_first: bool, clean: timing.Clean) -> timing.Rep:
    """One repetition on fresh inputs: reference and candidate (in the order given: the caller draws
    it in secret), the check of every output, and the two empty brackets, each but the last followed
    by a hand-off to the twin outside the bracket (``Bench.company_check``), then the hand-off to the
    runner alone (``Bench.runner_hand_off``) and one more check after it. Every output is checked. A
    repetition in which one of the judge's fixed workloads (flushes, probes, hand-offs) was
    slow had company on the GPU (timing.contention): it says so, and the statistics do not use it."""
    sets = bench.fresh_inputs()
    outputs: list = [None, None]
    brackets: list = [None, None]
    checks = []
    for side in (1, 0) if candidate_first else (0, 1):
        brackets[side], outputs[side] = bench.reference_batch(model, sets) if side == 0 else bench.candidate_batch(sets)
        checks.append(bench.company_check())
    checking = time.perf_counter()
    check_batch(outputs[0], outputs[1], rep, bench.state.timed_bounds)
    if bench.mutates:  # the slots hold the candidate's inputs after its batch until the next copy in
        check_inputs_after([tensor_leaves(args) for args in bench.inputs_after], bench.shared_in, rep)
        bench.inputs_after = None
    bench.check_s += time.perf_counter() - checking
    outputs = [None, None]  # the reference's are free before the empty brackets (which reuse the copy-out)
    empty = bench.empty_batch()
    checks.append(bench.company_check())
    remote_empty, hand_off, twin_timed = bench.remote_empty_batch(sets)
    runner_hand_off = bench.runner_hand_off(sets)
    checks.append(bench.company_check())  # work the runner left queued after its empty batch shows here
    every = [*brackets, empty, remote_empty]
    flushes, probes = [b.flush_s for b in every], [b.probe_s for b in every]
    hand_offs = [hand_off if twin_timed else 0.0, runner_hand_off, *checks]  # what the GPU timed
    contended = timing.contention(flushes, probes, hand_offs, clean)
    reference, candidate = brackets
    return timing.Rep(reference.seconds, candidate.seconds, empty.seconds, remote_empty.seconds, hand_off, contended,
                      runner_hand_off)  # fmt: skip


def queued_ops(scale: str | None) -> int:
    """``QUEUED_OPS`` times the launch queue's scale (``"4x"``, as work_queues.LAUNCH_QUEUE_SCALE_ENV
    gives it to every GPU judge and runner; the driver's default where None or not a scale)."""
    try:
        factor = float(scale.removesuffix("x")) if scale and scale.endswith("x") else 1.0
    except ValueError:
        factor = 1.0
    return max(1, int(QUEUED_OPS * factor)) if 0 < factor <= 64 else QUEUED_OPS


def queue_calls(in_leaves: int, out_leaves: int, reference_ops: int, candidate_ops: int, persistent: bool,
                queued: int = QUEUED_OPS) -> int:  # fmt: skip
    """Calls per batch whose GPU operations each side can queue on its stream behind a hold, ``queued``
    of them at most: per call, the judge's copies into the slots (the input sets into the input slots,
    the twin's empty bracket's outputs into the output slots), the reference's operations (and its
    output copies, where it returns memory of its own), the candidate's (its launches and PyTorch ops
    as its runner reported them in the trials: its word, which sets only its own batch's length) and
    its runner's copies into the output slots. At least 1."""
    per_call = max(in_leaves + out_leaves, reference_ops + (out_leaves if persistent else 0),
                   candidate_ops + out_leaves, 1)  # fmt: skip
    return max(1, queued // per_call)


def forward_ops(model, inputs: list) -> int:
    """GPU operations one forward of the judge's reference queues, counted as PyTorch dispatches
    them (views and allocations launch nothing; a library op may launch more than one kernel, which
    ``QUEUED_OPS``'s margin covers); 1 where they cannot be counted."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not (func.is_view or func.__name__.startswith(("empty", "detach", "alias"))):
                self.ops += 1
            return func(*args, **(kwargs or {}))

    counter = Counter()
    try:
        with torch.no_grad(), counter:
            model(*inputs)
    except Exception:  # a reference the mode cannot run through: no bound of its own
        return 1
    return max(counter.ops, 1)


def grown_count(rep: timing.Rep, count: int, clean_hand_off_s: float, limit: int) -> int:
    """Calls per batch that give the candidate's net time ``timing.SIGNAL_FACTOR`` times its noise
    (mostly the hand-off's, timing.Subtraction), judged from one repetition of ``count`` calls;
    ``count`` where it already does, at most ``limit``."""
    less = timing.subtracted([rep], clean_hand_off_s)
    net, wanted = rep.candidate - less.remote, timing.SIGNAL_FACTOR * less.candidate_noise
    if net >= wanted:
        return count
    per_call = max(net, 0.05 * less.candidate_noise) / count  # a net time lost in the noise: grow as far as allowed
    return max(count, min(limit, math.ceil(wanted / max(per_call, 1e-12) - 1e-6)))


def warm_up(bench: Bench, model, reps: int = WARM_UP_REPS) -> timing.Rep:
    """``reps`` untimed repetitions (autotuning, caches, the first runs); the last. Each is counted in
    ``bench.untimed``."""
    rep = None
    for _ in range(max(reps, 1)):
        bench.untimed += 1
        rep = repetition(bench, model, 0, bool(secrets.randbits(1)), timing.Clean())
    return rep


@dataclass
class Prepared:
    """A timing made ready (``prepare_timing``) under this GPU's lock held shared: the model timed against,
    the batch's slots mapped by the runner and warmed up; the measured repetitions are the exclusive part."""

    model: Any
    bench: Bench
    count: int
    footprint: Footprint
    sample_inputs: list | None
    sample_output: Any
    sample_bytes: int
    one_s: float
    """The reference's time of one call (s)."""
    bytes_read: int
    mutates: bool
    persistent: bool
    queue_calls: int = MAX_GROWN_BATCH
    """Most calls of a grown batch each side can queue behind a hold (``queue_calls`` of ``queued_ops``)."""


def prepare_timing(state, reference) -> Prepared:
    """What a timing needs before its measured repetitions, none of which is a measurement: a sample
    input set of its own (the trials' are gone: their memory is the batch's), the model timed against,
    the batch's size and slots (the runner maps them), and the batch's first run (an untimed
    repetition: autotuning, caches, the slots' first use). Run under this GPU's lock held shared: another judge's
    work beside it changes no measurement (the holds start again, and whether the batch must be longer
    is decided, under the exclusive hold: ``time_candidate``); at most the batch's first size, from
    the reference's time of one call, comes out smaller. Its untimed repetitions are ``PREPARE_REPS``,
    whatever they measure."""
    mutates = state.footprint is not None and state.footprint.mutates
    sample_inputs = reference.inputs(secrets.randbits(63))
    compiling = time.perf_counter()
    model = _baseline(reference, state.job.baseline, sample_inputs)
    if state.job.baseline != "eager":  # the judge's own compilation is not the candidate's time
        state.extend(time.perf_counter() - compiling)
    with torch.no_grad():
        sample_output = model(*sample_inputs)
    persistent = outputs_persist(model, sample_output, sample_inputs)
    footprint = Footprint.of(reference.model, sample_inputs, sample_output, float64=False, mutates=mutates)
    sample_bytes = nbytes(sample_inputs) + nbytes(sample_output)
    ops = (len(tensor_leaves(sample_inputs)), len(tensor_leaves(sample_output)),
           forward_ops(reference.model, clone(sample_inputs) if mutates else sample_inputs), state.forward_ops,
           persistent)  # fmt: skip
    count, one_s = _batch_size(state, model, sample_inputs, footprint, sample_bytes, queue_calls(*ops))
    queue = queue_calls(*ops, queued_ops(os.environ.get(LAUNCH_QUEUE_SCALE_ENV)))  # a grown batch's bound
    bench = Bench(state, reference, sample_inputs, sample_output, count, mutates, persistent)
    state.shared = SharedInputs(bench.shared_in, bench.shape)  # the input slots the runner maps now
    warm_up(bench, model, PREPARE_REPS)
    state.stages["timing_setup_untimed_reps"] = bench.untimed
    return Prepared(model, bench, count, footprint, sample_inputs, sample_output, sample_bytes, one_s,
                    nbytes(sample_inputs), mutates, persistent, queue)  # fmt: skip


def time_candidate(state, reference, prepared: Prepared | None = None) -> dict:
    """The speedup, from batches of fresh input sets (``prepared``: ``prepare_timing``'s, made now
    where None); None with a ``timing_untrusted`` finding where no trustworthy one could be measured
    before the ceiling (timing.stop_reason). The caller holds this GPU's lock exclusively: the first
    repetition alone on the GPU (untimed: ``warm_up``) says whether the batch is long enough for the
    candidate's signal to dominate the hand-off; a longer one is made and warmed up where it is not."""
    job, ctx = state.job, state.ctx
    prepared = prepared or prepare_timing(state, reference)
    model, bench, count, footprint = prepared.model, prepared.bench, prepared.count, prepared.footprint
    sample_bytes, bytes_read = prepared.sample_bytes, prepared.bytes_read
    warming, untimed, grown = time.perf_counter(), bench.untimed, 0
    inputs_s = bench.inputs_s = 0.0  # the exclusive part's alone
    first = warm_up(bench, model)
    untimed = bench.untimed - untimed
    # a fast candidate's batch too short for its signal to dominate the hand-off
    limit = min(MAX_GROWN_BATCH, max(count, int(MAX_BATCH_S / prepared.one_s)),
                max(1, SLOT_BYTES // max(sample_bytes, 1)), max(count, prepared.queue_calls))  # fmt: skip
    wanted = grown_count(first, count, ctx.hand_off_s, limit)
    if wanted > count:
        inputs_s += bench.inputs_s
        bench = prepared.bench = None  # its flush buffer and copy-out go back before the longer batch's
        count = timing_batch(footprint, available_bytes(ctx.device) + sample_bytes, wanted)
        bench = Bench(state, reference, prepared.sample_inputs, prepared.sample_output, count, prepared.mutates,
                      prepared.persistent)  # fmt: skip
        state.shared = SharedInputs(bench.shared_in, bench.shape)
        warm_up(bench, model)
        untimed, grown = untimed + bench.untimed, 1
    # the exclusive hold's parts before the measured repetitions (BENCHMARKS.md, the RL-shaped batch)
    state.stages |= {"timing_warm_up": round(time.perf_counter() - warming, 4), "timing_untimed_reps": untimed,
                     "timing_grown": grown}  # fmt: skip
    prepared.sample_inputs = prepared.sample_output = None  # the batch's input sets and outputs take their memory
    prepared.bench = None
    bench.holds.held_s = bench.check_s = 0.0  # the measured repetitions' alone
    clean = clean_workloads(ctx)
    floor = timing.floor_s(bytes_read, ctx.copy_bandwidth)
    reps: list[timing.Rep] = []
    began = time.perf_counter()
    ceiling = min(timing.ceiling_s(job.timing_budget_s),
                  max(job.timing_budget_s, state.deadline - time.monotonic() - DEADLINE_RESERVE_S))  # fmt: skip
    counted, stopped, n = None, None, 0
    while stopped is None:
        reps.append(repetition(bench, model, n + 1, bool(secrets.randbits(1)), clean))
        n += 1
        spent = time.perf_counter() - began
        if reps and (len(reps) % timing.CHECK_BATCH == 0 or spent >= job.timing_budget_s):
            counted = timing.tally(reps, count, clean.hand_off_s, floor)
            stopped = timing.stop_reason(counted.summary, job.timing_target, spent, job.timing_budget_s,
                                         counted.contended, ceiling)  # fmt: skip
        elif spent >= ceiling:
            stopped = "ceiling"
    state.stages["timing_measured_reps"] = n
    state.stages["timing_inputs"] = round(inputs_s + bench.inputs_s, 4)  # of the exclusive part, input sets made
    # of the measured repetitions: their holds, and the GPU's time in the brackets of those that counted
    state.stages["timing_holds"] = round(bench.holds.held_s, 4)
    state.stages["timing_check"] = round(bench.check_s, 4)
    state.stages["timing_brackets"] = round(sum(r.reference + r.candidate + r.empty + r.remote_empty + r.runner_hand_off
                                                for r in reps), 4)  # fmt: skip
    return timing_result(counted, stopped, job.baseline, count, bench, reps, ctx, bytes_read, ceiling)


def timing_result(counted: timing.Tally | None, stopped: str, baseline: str, count: int, bench: Bench,
                  reps: list[timing.Rep], ctx, bytes_read: int, ceiling: float) -> dict:  # fmt: skip
    """The result's ``speedup``, ``timing`` and ``findings`` from what the timing measured."""
    summary = counted.summary if counted is not None else None
    trusted = stopped in timing.TRUSTED and summary is not None
    result: dict[str, Any] = {"speedup": round(summary.speedup, 4) if trusted else None}
    invalid = dict(counted.invalid) if counted is not None else {}
    findings = []
    if summary is not None:
        result["timing"] = {
            "baseline": baseline,
            "reference_ms": summary.reference_ms,
            "reference_ci_ms": list(summary.reference_ci_ms),
            "candidate_ms": summary.candidate_ms,
            "candidate_ci_ms": list(summary.candidate_ci_ms),
            "speedup_ci": [round(x, 4) for x in summary.speedup_ci],
            "spread": round(summary.spread, 4),
            "reps": summary.reps,
            "stopped": stopped,
            "input_sets": len(reps) * count,
            "flush_bytes": bench.scratch.numel(),
            "late_brackets": bench.late,
            "late_by": dict(bench.late_by),
            "invalid_reps": sum(invalid.values()),
            "contended_reps": invalid.get("contended", 0),
            "contended_by": timing.contended_by(reps),
            "subtracted_us": [round(x * 1e6, 2) for x in counted.subtracted_s],
            "hand_off_us": round(statistics.median(r.hand_off for r in reps) * 1e6, 2),
            "runner_hand_off_us": round(statistics.median(r.runner_hand_off for r in reps) * 1e6, 2),
            "clean_hand_off_us": round(ctx.hand_off_s * 1e6, 2),
        }
    if not trusted:
        why = {"contended": "the GPU had other work on it in most repetitions (work a solution leaves running "
                            "between its calls counts too)",
               "ceiling": f"fewer than {timing.MIN_VALID_REPS} repetitions were measurements, or their spread "
                          f"was too wide, within the ceiling of {ceiling:.1f} s"}.get(stopped, stopped)  # fmt: skip
        listing = ", ".join(f"{k} x{v}" for k, v in sorted(invalid.items())) or "none"
        by = timing.contended_by(reps)
        if by:  # which of the judge's workloads ran slow
            listing += " (slow: " + ", ".join(f"{k} x{v}" for k, v in sorted(by.items())) + ")"
        findings.append({"check": "timing_untrusted", "message": f"no speedup: {why} ({len(reps)} repetitions, "
                         f"{summary.reps if summary else 0} valid; not measurements: {listing})"})  # fmt: skip
    floor_reps = invalid.get("physical_floor", 0)
    flag = timing.implausible(summary.candidate_ms, bytes_read, ctx.copy_bandwidth) if trusted else None
    if flag is None and floor_reps and floor_reps * 2 >= len(reps):
        flag = (f"{floor_reps} of {len(reps)} repetitions timed the candidate's batch below the time needed just to "
                "read its inputs; the measurement was evaded, not beaten")  # fmt: skip
    if flag:
        findings.append({"check": "implausible_speedup", "message": flag})
    if findings:
        result["findings"] = findings
    return result


def profile_candidate(state, reference) -> dict:
    """Coverage from one forward the runner profiles, on fresh inputs: in the input slots it maps
    (the timing batch's call 0, or the trials' where the job was not timed) where they fit, else in
    the message."""
    message = inputs_message(state.shared, p.Profile, reference.inputs(secrets.randbits(63)))
    answer = state.ask(message, (p.ProfileResult,))
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


def speed_and_coverage(state, reference) -> dict:
    """Timing and profiling of a correct candidate, each on input sets of its own: the caller holds no
    trial any more, so that its memory is the timing batch's. The timing's preparation (its stage
    ``timing_setup``) holds this GPU's lock shared, its measured repetitions and the profiled forward
    hold it exclusively (the wait for it: the job's ``gpu_lock_wait_exclusive``)."""
    result: dict[str, Any] = {}
    prepared = None
    if state.job.timing:
        with state.timed("timing_setup"), gpu_lock(state.ctx.gpu_lock, exclusive=False):
            prepared = prepare_timing(state, reference)
    with gpu_lock(state.ctx.gpu_lock, exclusive=True, keep_shared=True):  # shared until the runner is gone
        if prepared is not None:
            with state.timed("timing"):
                result |= time_candidate(state, reference, prepared)
            prepared = None
            if state.footprint is not None:  # a large batch's memory goes back before the runner profiles
                give_back(state.ctx.device, state.footprint.inputs + state.footprint.outputs)
        if state.job.profile:
            with state.timed("profiling"):
                result |= profile_candidate(state, reference)
    return result
