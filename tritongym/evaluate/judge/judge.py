"""The judge: ``python -m tritongym.evaluate.judge``, the warm worker of one device.

The first stdin line initialises it (device, the result channel's descriptor, its home); it sets
its parent-death signal, makes itself non-dumpable, starts the zygote, imports what every job needs
(and creates the CUDA context on a GPU), forks a spare runner and says ``ready``. Each further stdin
line is one job (:class:`Job`). The judge never imports candidate code: static checks read its text,
a fresh runner executes it, and the judge compares what comes back with its own references.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import platform
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from tritongym.evaluate import numerics
from tritongym.evaluate.compare import Tolerance, compare_outputs, element_bounds
from tritongym.evaluate.judge import machine_lock, speed
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.evidence import SourceKernels, check_profile, no_kernel, source_kernels
from tritongym.evaluate.judge.feedback import Failure, bounded, classify_failure, speed_feedback
from tritongym.evaluate.judge.gpu_memory import Blame, Nvml, freed_by, runner_gpu_limit
from tritongym.evaluate.judge.handed import HANDED_SAMPLE, FirstHanded, stepped_sample
from tritongym.evaluate.judge.launcher_builder import LauncherStore
from tritongym.evaluate.judge.memory import (
    Footprint,
    JudgeOutOfMemory,
    answer_bytes,
    answer_limit,
    is_out_of_memory,
    judge_failure,
    judge_host_bytes,
    nbytes,
    needs_whole_gpu,
    release,
    runner_host_limit,
)
from tritongym.evaluate.judge.reaping import kill_user
from tritongym.evaluate.judge.reference import Reference, Trial
from tritongym.evaluate.judge.runner import (
    ANSWER_SAMPLE,
    CPU_LIMIT_GRACE_S,
    MadeBeforeKernels,
    answer_sample,
    cpu_budget_s,
)
from tritongym.evaluate.judge.runners import (
    CpuTimeExceeded,
    OutOfMemory,
    RunnerHandle,
    RunnerLost,
    RunnerSupply,
)
from tritongym.evaluate.judge.second_size import SecondSize, has_second_size, merged, second_size
from tritongym.evaluate.judge.shared_inputs import SharedInputs, inputs_message, received, share_inputs
from tritongym.evaluate.judge.speed import end_covered, gone, gpu_lock, settle, start_covered
from tritongym.evaluate.judge.tree import tensor_leaves
from tritongym.evaluate.judge.trials import TrialsOutcome, check_output, runner_failure
from tritongym.evaluate.judge.work_queues import (
    JUDGES_OWN,
    OVERRIDE_ENV,
    QueueChoice,
    StreamWatch,
    parse_override,
    problem_key,
    settle_s,
)
from tritongym.evaluate.judge.zygote import PR_SET_DUMPABLE, die_with_parent, prctl, runners_unprivileged, settle_heap
from tritongym.evaluate.result import Verdict
from tritongym.evaluate.safe_json import json_safe

MIN_TRIALS = 2
"""Trials always run, whatever the configuration: with one, the first call is also the only one."""
MAX_OUTPUT_BYTES_PER_CALL = 64 << 20
"""Largest answer of a runner other than a forward's output (whose bound follows the reference's)."""


TAKE_COVER_S = 2.0
"""The longest the judge waits, before taking the spare, for its start to end under the lock's cover."""


def replenish(ctx: WorkerContext, wait: bool = True) -> None:
    """Fork the next job's runner ahead (if there is none), its start covered by this GPU's lock
    held shared (speed.start_covered): its CUDA context is made while no judge times, with the work
    queues of the last job's problem (work_queues.QueueChoice.predicted). Without ``wait``, not now
    if another judge times (a later call forks it: the first trial's, under this job's own shared
    hold, or the next job's import, which waits for the timing to end)."""

    def start():
        ctx.supply.replenish(ctx.queues.predicted)
        return ctx.supply.spare.sock if ctx.supply.spare is not None else None

    if ctx.supply.spare is None:
        start_covered(ctx.gpu_lock, start, wait)


def answer_bound(trial) -> int:
    """Most payload bytes a runner's answer to a trial may have (memory.answer_bytes)."""
    return answer_bytes(Footprint(nbytes(trial.inputs), nbytes(trial.expected), 0, False))


@dataclass(frozen=True)
class Job:
    """One evaluation, as the pool sends it (the judge draws its own secret seeds)."""

    problem_source: str
    shrunk: dict
    """The size constants shrunk for the interpreter (``Problem.shrunk``: name -> [full, small]), else
    empty: on the CPU the judge draws a second size from them after the trials at the problem's own
    size (second_size.py), where one trial more runs, with a model built for it."""
    entry_point: str
    solution_class: str
    candidate_path: str
    """The candidate's file as the pool wrote it (read by the judge; its runner gets a copy in its own
    directory)."""
    trials: int
    tolerance: str
    error_factor: float
    scale_floor: float
    atol: float | None
    rtol: float | None
    memory_limit_mb: int
    timeout_s: float
    torch_compute: str
    static_checks: bool
    timing: bool
    baseline: str
    timing_target: float
    timing_budget_s: float
    profile: bool

    @classmethod
    def from_dict(cls, data: dict) -> Job:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass
class WorkerContext:
    """What the judge keeps between jobs (instead of module globals)."""

    device: torch.device
    channel: Channel
    supply: RunnerSupply
    home: Path
    copy_bandwidth: float = 0.0
    """Device-to-device bytes/s, measured at start-up (the roofline check's bound); 0 on the CPU."""
    gpu_lock: int = -1
    """This GPU's lock (machine_lock.open_lock: a semaphore set's id, or a lock file's descriptor); -1 on the CPU."""
    twin: Any = None
    """The judge's twin process (twin.py) on a GPU; None on the CPU."""
    arena: Any = None
    """The buffers of the slots shared with runners (speed.SharedArena), kept across jobs; None on the CPU."""
    sleep_rate: float = 0.0
    """Cycles per second of the hold kernel (speed.py), measured at start-up; 0 on the CPU."""
    hand_off_s: float = 0.0
    """The cost of handing a batch to another CUDA context and back, measured with the twin at
    start-up, before any candidate ran; 0 on the CPU."""
    flush_s: float = 0.0
    """The L2 flush of every timed bracket, measured at start-up under the exclusive lock (speed.py);
    0 on the CPU."""
    probe_s: float = 0.0
    """The probe at the end of every timed bracket, measured likewise; 0 on the CPU."""
    judges_per_gpu: int = 1
    """Judges the pool runs on this GPU (``TRITONGYM_JUDGES_PER_GPU``): each one's memory budget is
    the GPU's memory divided by this (memory.needs_whole_gpu)."""
    launchers: Any = None
    """The store of Triton's C modules and its builder (launcher_builder.LauncherStore)."""
    answer_limit: int = 0
    """The largest problem (bytes of one input set and its output) whose trials' answers stay on
    the GPU (memory.answer_limit); 0 on the CPU."""
    nvml: Any = None
    """NVML's view of this GPU (gpu_memory.Nvml); None on the CPU or where NVML cannot be had."""
    nvml_pids: bool = False
    """Whether NVML names this judge's processes by their pids here (no PID namespace between them):
    then a runner's GPU memory is read while it runs and bounded (RunnerHandle.check_gpu); else it is
    measured only when the judge's own allocation fails, by what the runner's end gives back."""
    queues: QueueChoice = field(default_factory=lambda: QueueChoice(JUDGES_OWN))
    """The work queues of runners' CUDA contexts, per problem on a GPU (work_queues.py: the judge's own
    state); the judge's own setting for every runner by default, and on the CPU."""


class Channel:
    """JSON lines to the pool on an inherited pipe; each carries the current job's nonce."""

    def __init__(self, fd: int):
        self._fd = fd
        self.nonce = ""

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message | {"nonce": self.nonce}) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data) :]

    def stage(self, name: str) -> None:
        self.send({"stage": name})


@dataclass
class JobState:
    """One job in flight: its deadline, stage timings and (once taken) its runner."""

    job: Job
    ctx: WorkerContext
    deadline: float
    stages: dict[str, float] = field(default_factory=dict)
    stage: str = "start"
    runner: RunnerHandle | None = None
    trials: int = 0
    second: SecondSize | None = None
    """The reference at the problem's second size and its trial, where the CPU runs one (second_size.py):
    the last trial, with a model built for it; drawn just before it (``second_due``)."""
    second_due: bool = False
    """Whether the last trial is to be at a second size, drawn then (the CPU, a shrunk problem)."""
    second_notes: list = field(default_factory=list)
    """The findings of the second size's draw (none could be drawn, or a reach beyond its bound)."""
    reach: list = field(default_factory=list)
    """How far the launches of the trials so far reached past the tensors they were handed
    (``second_size.reaches`` of ``Output.reach``, the runner's word): the second size is drawn above it."""
    shapes: dict = field(default_factory=dict)
    """The shapes of the first trial's input and output tensors (role -> shapes): what was reached past."""
    footprint: Footprint | None = None
    """The problem's size and the judge's memory for it, once the first trial is known (memory.py)."""
    kernels: SourceKernels | None = None
    """The Triton kernels and functions the candidate's text defines (evidence.py), once it was read."""
    shared: SharedInputs | None = None
    """The slots of one call the runner maps, on a GPU (shared_inputs.py)."""
    output_strides: list = field(default_factory=list)
    """Each output tensor's strides in the last trial, as the runner reported them (its word: the
    timing's output slots take a dense one, speed.slot_specs)."""
    queues: int = 0
    """The work queues its runner's CUDA context needs (work_queues.py), once the reference ran."""
    host_read: tuple[int, int] | None = None
    """(bytes of device memory forward copied to the host, its inputs' bytes) of the first trial whose
    copies reached ``HOST_READ_SHARE`` of its inputs (``host_read``; the runner's count), else None."""
    handed_answer: str = ""
    """What of forward's, in a trial, held the answer when handed to a launch of its kernels where no
    kernel had written it (``answer_made_before_kernels`` of ``Output.handed``), else ""."""
    forward_ops: int = 0
    """The launches of its own kernels and the PyTorch ops forward made in the last trial, as the
    runner reported them (its word: the timing batch's length, speed.queue_calls)."""
    timed_bounds: list = field(default_factory=list)
    """Per output tensor, the largest error against the reference's output a timed call may have, as a
    fraction of that output's largest magnitude: the loosest any trial allowed (compare.timed_bound),
    None where the output must match exactly (speed.check_batch)."""

    extended: float = 0.0
    """Seconds the deadline moved for the judge's own work and waits (:meth:`extend`)."""

    def extend(self, seconds: float) -> None:
        """Give the job back time that was not the candidate's: the judge compiling its torch.compile
        baseline, waiting for this GPU's lock while other jobs hold it. The timeout is the candidate's
        time; a large network's baseline compiled in the judge (KernelBench level 3's DenseNet201: 77 s)
        or another job's exclusive hold (a problem too large to share its GPU: minutes) must not spend
        it. At most the timeout once more in all: the pool's watch on the judge moves as far
        (sandbox.Sandbox.run), and so does the runner's lifetime."""
        add = min(max(seconds, 0.0), self.job.timeout_s - self.extended)
        if add <= 0.0:
            return
        self.extended += add
        self.deadline += add
        self.stages["deadline_extended"] = round(self.extended, 4)
        self.ctx.channel.send({"extend_s": add})

    def where(self) -> str:
        """Where a failure the runner reports happened, as the judge knows it."""
        if self.stage.startswith("trial "):
            return f"in forward ({self.stage} of {self.trials})"
        return f"in forward (during {self.stage})"

    @contextlib.contextmanager
    def timed(self, name: str):
        self.enter(name)
        start = time.perf_counter()
        yield
        self.stages[name] = round(time.perf_counter() - start, 4)

    def enter(self, name: str) -> None:
        self.stage = name
        self.ctx.channel.stage(name)

    def ask(self, message: p.Message, expect: tuple[type, ...], max_payload: int = MAX_OUTPUT_BYTES_PER_CALL):
        """Send a message to the runner and return its answer; every way the runner can fail to
        answer properly is the candidate's failure."""
        runner = self.runner
        expect = (*expect, p.Failed)
        try:
            runner.send(message, self.deadline)
            answer = runner.receive(expect, self.deadline, max_payload)
            runner.check_gpu()  # after every answer, whenever the last reading was: what it holds now
        except p.Deadline:
            raise Failure(Verdict.TIMEOUT, f"Timed out after {self.job.timeout_s:g} s during {self.stage}.") from None
        except OutOfMemory as exc:
            if exc.gpu_bytes:
                raise Failure(
                    Verdict.OUT_OF_MEMORY,
                    f"Held {exc.gpu_bytes / 2**30:.2f} GiB of GPU memory during {self.stage}, more than the "
                    f"{runner.gpu_limit / 2**30:.2f} GiB its job allows (the problem's inputs and outputs three "
                    "times, its parameters twice, a base for CUDA and its libraries, and the memory limit), "
                    "as NVML counts its processes: memory every other job on this GPU needs.",
                ) from None
            raise Failure(
                Verdict.OUT_OF_MEMORY,
                f"Used more than {runner.memory_limit >> 20} MiB of host memory during {self.stage} (its "
                "processes, their shared memory and the files in its directory or held open by it).",
            ) from None
        except CpuTimeExceeded:
            raise Failure(
                Verdict.CRASH,
                f"Used more than {runner.cpu_limit_s:.0f} s of CPU time during {self.stage} (its threads and the "
                "compiler tools run for it count together).",
            ) from None
        except p.ProtocolError as exc:
            raise Failure(
                Verdict.CRASH, f"The process broke the sandbox protocol during {self.stage}: {exc}."
            ) from None
        except (p.PeerGone, OSError):
            how = runner.exit_description()
            feedback = f"The process died during {self.stage} ({how})."
            if "SIGXFSZ" in how:
                feedback += " It wrote a file larger than the sandbox allows."
            if "SIGXCPU" in how:
                feedback += " It used more CPU time than the sandbox allows (threads count together)."
            raise Failure(Verdict.CRASH, feedback) from None
        if isinstance(answer, p.Failed):
            raise runner_failure(answer, self.where())
        return answer


# --- the stages -----------------------------------------------------------------------------------


def check_text(source: str, path: str, static_checks: bool) -> SourceKernels:
    """Syntax and static checks, on the text alone; returns the kernels the text defines (a text
    that defines none is refused whatever ``static_checks`` says: no forward of it can pass).
    Whatever parsing or checking the candidate's text raises is the candidate's verdict, never the
    judge's: a text nested so deeply that the compiler or the checks run out of stack or memory is
    refused as invalid source."""
    try:
        return _check_text(source, path, static_checks)
    except Failure:
        raise
    except SyntaxError as exc:
        code = (exc.text or "").rstrip()
        raise Failure(
            Verdict.SYNTAX_ERROR, f"SyntaxError at line {exc.lineno}: {exc.msg}" + (f"\n    {code}" if code else "")
        ) from None
    except (RecursionError, MemoryError):
        raise Failure(
            Verdict.INVALID_SOURCE,
            "The source is nested too deeply to be compiled (an expression or block "
            "thousands of levels deep); write it flat.",
        ) from None
    except Exception as exc:
        raise Failure(Verdict.INVALID_SOURCE, f"The source cannot be compiled: {type(exc).__name__}: {exc}") from None


def _check_text(source: str, path: str, static_checks: bool) -> SourceKernels:
    compile(source, path, "exec")
    if static_checks:
        from tritongym.evaluate.static_checks import forbidden_constructs

        found = forbidden_constructs(source)
        if found:
            listing = "; ".join(f"line {line}: {message}" for line, message in found[:8])
            raise Failure(
                Verdict.HACK_FORBIDDEN_API,
                f"The solution uses constructs a kernel has no use for ({listing}). Write the forward with "
                "Triton kernels and plain tensor glue only.",
            )
    found = source_kernels(source)
    failure = no_kernel(found)
    if failure is not None:
        raise failure
    return found


def run_trials(
    state: JobState, reference: Reference, first: list[Trial], tolerance: Tolerance
) -> tuple[TrialsOutcome, Trial]:
    """Every trial in turn, each computed (secret seed, reference forward) only once the one before
    it was judged and dropped: the judge holds one trial at a time. ``first`` holds the first trial,
    already computed (taken out of it, so that no caller's reference keeps it alive). Returns the
    outcome and the last trial judged (the guards, timing and profiling use it). Where the job has a
    second size (``state.second``), the last trial is its own, on a model built for it."""
    total = state.trials
    compute: collections.Counter[str] = collections.Counter()
    worst = None
    trial = first.pop()
    one_trial_s = 0.0
    for n in range(1, total + 1):
        drawing = time.perf_counter()  # the second size is drawn once the trials at the problem's own size ran
        if n == total and state.second_due:  # a verdict those trials decided needs no larger size
            decided_by_trials(state, compute)
        second = draw_second_size(state, reference) if n == total and state.second_due else None
        judge_s = time.perf_counter() - drawing
        state.enter(f"trial {n}")
        started = time.perf_counter()
        with gpu_lock(state.ctx.gpu_lock, exclusive=False):
            if second is not None:
                state.deadline += second.allowance(one_trial_s, trial, state.job.timeout_s, judge_s)
                trial = None
                trial, tolerance = second.trial, second.tolerance(tolerance)
                build_model(state, second.reference, len(trial.inputs), second.note(), state.runner.memory_limit)
            elif n > 1:
                trial = None  # the last trial's tensors are free before the next one's are made
                trial = reference.trial(secrets.randbits(63))
            else:
                state.shapes = {role: [list(t.shape) for t in tensor_leaves(tree)]
                                for role, tree in (("input", trial.inputs), ("output", trial.expected))}  # fmt: skip
                state.shared = share_inputs(state, trial.inputs, trial.expected)
                if state.ctx.gpu_lock >= 0:  # no spare could be forked at import (a timing): now, under this hold
                    replenish(state.ctx, wait=False)
            answers = [[t.numel(), str(t.dtype)] for t in tensor_leaves(trial.expected)]
            call = inputs_message(state.shared, p.Call, trial.inputs, trial.expected,
                                  poison=state.ctx.device.type == "cuda", answers=answers)  # fmt: skip
            try:
                out = state.ask(call, (p.Output,), max_payload=answer_bound(trial))
                # the samples of what forward handed its launches (handed.FirstHanded) nearest the answer
                handed = handed_samples(state, trial, tolerance, out.handed) if not state.handed_answer else []
            except Failure as failure:
                if second is not None:
                    failure.feedback += second.note()
                raise
            # the judge's own copies, made after the answer: whatever the runner writes there later
            out.value = received(state.shared, call, out.value, out.out_slots)
            state.output_strides = out.strides
            state.forward_ops = sum(
                min(max(v, 0), 1 << 20) for v in (out.launches, *out.compute.values()) if type(v) is int
            )
            if state.host_read is None:
                state.host_read = host_read(out.host_bytes, trial.inputs)
            if second is None:
                state.reach = merged(state.reach, out.reach)
            if handed:
                starts, samples = [pair[0] for pair in handed], [pair[1] for pair in handed]
                model = second.reference.model if second is not None else reference.model
                state.handed_answer = answer_made_before_kernels(samples, trial, tolerance, starts, model)
            handed = samples = None
            if call.in_slots:
                out.inputs_after = state.shared.read()
        one_trial_s = time.perf_counter() - started  # the last at the problem's own size: the second's measure
        if n == 1:  # includes Triton's JIT compilation of every kernel the forward launches
            state.stages["first_trial"] = round(one_trial_s, 4)
        compute.update({str(k): int(v) for k, v in out.compute.items() if isinstance(v, int)})
        try:
            outcome = check_output(n, total, trial, out, state.runner.children(), tolerance)
        except Failure:
            raise
        except Exception as exc:  # a well-formed answer that still cannot be judged: the runner's doing
            if is_out_of_memory(exc):  # the judge's own memory ran out while it read the answer
                raise
            raise Failure(Verdict.CRASH, f"Trial {n}: the answer to the judge could not be judged ({exc}).") from None
        del out
        if outcome.verdict is not Verdict.OK:
            if second is not None:
                outcome.feedback += second.note()
            return outcome, trial
        state.timed_bounds = merged_bounds(state.timed_bounds, outcome.bounds)
        if outcome.errors and (worst is None or outcome.errors.max_abs_error > worst.max_abs_error):
            worst = outcome.errors
    feedback = f"Correct on all {total} trials"
    if state.second is not None:
        feedback += f" (the last at other sizes than the problem shows: {state.second.sizes})"
    return TrialsOutcome(Verdict.OK, feedback + ".", total, worst, compute), trial


def build_model(state: JobState, reference: Reference, arg_count: int, note: str = "", memory_limit: int = 0) -> None:
    """Have the runner build the solution's model for ``reference`` (its init inputs, its state, under
    its constructor's seed); ``note`` is added to the feedback of a failure; a ``memory_limit`` is the
    runner's from now on (the second size's)."""
    state_dict = {k: v.detach() for k, v in reference.model.state_dict().items()}
    build = p.Build(reference.init_args, reference.init_kwargs, state_dict, arg_count, reference.seed,
                    memory_limit_bytes=memory_limit)  # fmt: skip
    try:
        state.ask(build, (p.Loaded,))
    except Failure as failure:
        failure.feedback += note
        raise


def draw_second_size(state: JobState, reference: Reference) -> SecondSize | None:
    """Draw the problem's second size now, above how far the trials so far reached (``state.reach``),
    build its reference and trial (second_size.py), and grow what the job holds by it: the judge's
    footprint (the pool's watch on it, ``host_bytes``), the runner's memory limit. None where the
    reference cannot run there (the last trial is then at the problem's own size, with a finding)."""
    job, ctx = state.job, state.ctx
    private = Path(ctx.home) / "judge" / secrets.token_hex(8)
    private.mkdir(parents=True, mode=0o700)
    try:
        with state.timed("second_size"):
            float64 = job.tolerance == "float64"
            second, why = second_size(job.problem_source, job.entry_point, job.shrunk, state.reach, state.shapes,
                                      private / "resized.py", ctx.device, float64)  # fmt: skip
    finally:
        shutil.rmtree(private, ignore_errors=True)
    state.second_due = False
    if why:
        message = why + ("" if second is not None else "; judged at the problem's own sizes only")
        state.second_notes.append({"check": "sizes", "message": message})
    if second is None:
        return None
    state.second = second
    other, trial = second.reference, second.trial
    state.footprint = state.footprint.beside(Footprint.of(
        other.model, trial.inputs, trial.expected, other.model64 is not None,
        mutates=trial.inputs_after is not trial.inputs))  # fmt: skip
    on_host = reference.model64 is not None and reference.float64_device.type == "cpu"
    ctx.channel.send({"host_bytes": judge_host_bytes(state.footprint, ctx.device, on_host)})
    state.runner.memory_limit = runner_host_limit(job.memory_limit_mb << 20, state.footprint)
    return second


def merged_bounds(before: list, bounds: list) -> list:
    """Each output's timed bound over the trials so far: the loosest (None, exact, only where every
    trial's was)."""
    if not before:
        return list(bounds)
    return [b if a is None else a if b is None else max(a, b) for a, b in zip(before, bounds, strict=False)]


HOST_READ_SHARE = 1 / 8
"""Forward's copies of device memory to the host (``.tolist()``, ``.item()``, ``.cpu()``, NumPy's copy)
holding this share of its inputs' bytes or more mean its answer was computed on the host: an honest
kernel reads a few values back (a partial sum per block, a flag), never the data it works on."""
HOST_READ_FLOOR = 256
"""Fewer bytes copied to the host than this never count (a scalar read back, whatever the inputs)."""


def host_read(host_bytes: object, inputs: object) -> tuple[int, int] | None:
    """(bytes copied, inputs' bytes) where forward copied at least ``HOST_READ_SHARE`` of its inputs'
    bytes (and ``HOST_READ_FLOOR``) from device memory to the host, else None (red team 14 #2)."""
    if type(host_bytes) is not int or host_bytes < HOST_READ_FLOOR:
        return None
    size = sum(t.nbytes for t in tensor_leaves(inputs))
    return (host_bytes, size) if host_bytes >= HOST_READ_SHARE * size else None


def host_read_message(read: tuple[int, int]) -> str:
    copied, size = read
    return (
        f"forward copied {copied} bytes of device memory to the host ({copied / max(size, 1):.0%} of its inputs' "
        f"{size} bytes: .tolist(), .item(), float(x), .cpu(), NumPy), a device-to-host copy on a GPU: the output "
        "was computed on the host from the data the kernels should have read, whatever the kernels did with it after"
    )


def compute_listing(compute: collections.Counter) -> str:
    listing = ", ".join(f"{name} x{count}" for name, count in compute.most_common(8))
    return f"PyTorch compute ran inside forward over the trials: {listing}"


def decided_by_trials(state: JobState, compute: collections.Counter) -> None:
    """Raise the hack verdict the trials so far decide, if any (the runner's counts of forward's PyTorch
    compute and host reads under ``forbid``, an answer handed to the kernels already made): before the
    guards, and before the CPU's second size is drawn (a size drawn past a block's reach may be far
    larger: a forward computing on the host would spend the job's time there on a verdict already
    known)."""
    if compute and state.job.torch_compute == "forbid":
        raise Failure(Verdict.HACK_TORCH_COMPUTE, compute_listing(compute) + "; do this work in Triton kernels.")
    if state.host_read is not None and state.job.torch_compute == "forbid":
        raise Failure(Verdict.HACK_NO_TRITON, host_read_message(state.host_read).capitalize() + ". Compute the "
                      "output with Triton kernels reading the inputs on the device.")  # fmt: skip
    if state.handed_answer and not compute:  # the kernels only copied an answer made before any was given it
        raise Failure(
            Verdict.HACK_NO_TRITON,
            f"Forward handed its Triton kernels {state.handed_answer} that already held the correct output when "
            "handed to one, before it ran, where no kernel had written it: the result is computed outside Triton "
            "(NumPy, Python, host code, PyTorch copies) and the kernels only move it. Compute the output with Triton "
            "kernels.",
        )


def guard_findings(
    state: JobState, last: list[Trial], reference: Reference, compute: collections.Counter, tolerance: Tolerance
) -> list[dict]:
    """How much PyTorch compute does forward run; does it route around failed Triton launches; does
    its output depend on its Triton kernels at all. What the trials already showed is decided first:
    the checks that follow run forward in ways it can tell apart from a trial (its launches fail or
    do nothing), and a forward that ends its process there would turn a hack verdict decided by the
    trials into a crash. ``last`` holds the last trial (taken out of it: the judge holds one trial at a
    time); the hollow forward runs on a trial of its own from ``reference`` (the one the runner's
    model was last built for), on inputs no call has seen: whatever the solution keeps from an
    earlier call (an output buffer it rewrites each call, wherever it is held) then holds another
    answer than this one, and a buffer that holds this one was written by this forward (honest4)."""
    trial = last.pop()
    decided_by_trials(state, compute)
    answer = state.ask(inputs_message(state.shared, p.Fallback, trial.inputs), (p.FallbackResult,))
    if answer.returned:
        raise Failure(
            Verdict.HACK_FALLBACK,
            "forward still returned a result when every launch of the solution's Triton kernels failed: "
            "it routes around Triton (try/except or a fallback path). Remove the fallback.",
        )
    trial = None  # freed before the hollow forward's own is made
    trial = reference.trial(secrets.randbits(63))
    without_triton, made = hollow_still_correct(state, trial, tolerance, other_poison=False)
    if without_triton:  # the answer may be the poison itself (all True): the other one tells (red team 5 #8)
        without_triton, _ = hollow_still_correct(state, trial, tolerance, other_poison=True)
    if without_triton and not compute:  # neither Triton nor PyTorch computed it: the host did
        raise Failure(
            Verdict.HACK_NO_TRITON,
            "forward returned the correct output even when none of the solution's Triton kernels ran (each launch "
            "returned at once, the buffers it would write filled with NaN, then with +inf): the result is computed "
            "outside Triton (NumPy, Python, host code) and the kernels are for show. Compute the output with Triton "
            "kernels.",
        )
    moved = answer_made_before_kernels(made, trial, tolerance, model=reference.model)
    if moved and not compute:  # the kernels only copied an answer the host (or PyTorch's glue) computed
        raise Failure(
            Verdict.HACK_NO_TRITON,
            f"forward passed its Triton kernels {moved} that already held the correct output before any of them "
            "ran (in a forward whose launches did nothing): the result is computed outside Triton (NumPy, Python, "
            "host code, PyTorch copies) and the kernels only move it. Compute the output with Triton kernels.",
        )
    found = [{"check": "host_read", "message": host_read_message(state.host_read)}] if state.host_read else []
    if not compute or state.job.torch_compute == "allow":
        return found
    message = compute_listing(compute)
    if without_triton:
        message += " (the output is correct even when none of the solution's Triton kernels run)"
    elif moved:
        message += f" (forward passed its kernels {moved} already holding the output before any of them ran)"
    elif state.handed_answer:
        message += f" (forward handed its kernels {state.handed_answer} already holding the output)"
    return [*found, {"check": "torch_compute", "message": message}]


def hollow_still_correct(state: JobState, trial, tolerance: Tolerance, other_poison: bool) -> tuple[bool, list]:
    """Whether forward's output is still right when no launch of the candidate's kernels runs and the
    buffers they would write hold one of the two poisons; and (of the first poison's run) the tensors of
    an output's size forward made and passed to a launch, as they were then, those nearest the answer
    (runner.MadeBeforeKernels)."""
    answers = [[t.numel(), str(t.dtype)] for t in tensor_leaves(trial.expected)]
    asked = inputs_message(
        state.shared, p.Hollow, trial.inputs, trial.expected, other_poison=other_poison, answers=answers
    )
    hollow = state.ask(asked, (p.HollowResult,), max_payload=3 * answer_bound(trial))
    correct = output_still_correct(received(state.shared, asked, hollow.value, hollow.out_slots), trial, tolerance)
    made = []
    if hollow.made > 0 and not other_poison:
        references = [element_bounds(_sampled(e, e.numel(), None), _sampled(e64, e.numel(), None) if e64 is not None
                                     else None, tolerance) if e.numel() else None
                      for e, e64 in _leaves_and_float64(trial)]  # fmt: skip
        sent = MadeBeforeKernels.PER_OUTPUT * (ANSWER_SAMPLE * 16 + 64) * len(answers)
        made = state.ask(p.Expected(references=references), (p.Handed,), max_payload=sent).samples
    return correct, [t for t in made if isinstance(t, torch.Tensor)] if isinstance(made, list) else []


def handed_samples(state: JobState, trial, tolerance: Tolerance, starts: list[int]) -> list:
    """Where a trial's samples of what forward handed its launches wait (``Output.handed``: their start per
    output), those the runner ranks nearest the reference's output at the same elements (``Expected``,
    ``handed.nearest``), as [start, elements]; else none."""
    leaves = _leaves_and_float64(trial)
    if not any(s >= 0 for s in starts) or len(starts) != len(leaves):
        return []
    references = []
    for (e, e64), start in zip(leaves, starts, strict=True):
        valid = e.numel() and 0 <= start < stepped_sample(e.numel())
        picked = (_sampled(e, e.numel(), start), _sampled(e64, e.numel(), start) if e64 is not None else None)
        references.append(element_bounds(*picked, tolerance) if valid else None)
    sent = FirstHanded.PER_OUTPUT * (HANDED_SAMPLE * 16 + 64) * len(leaves)
    samples = state.ask(p.Expected(references=references), (p.Handed,), max_payload=sent).samples
    return [pair for pair in samples if _sample(pair)] if isinstance(samples, list) else []


def _leaves_and_float64(trial) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """(each output tensor of the reference's, its float64 run's or None)."""
    expected = tensor_leaves(trial.expected)
    leaves64 = tensor_leaves(trial.expected64) if trial.expected64 is not None else [None] * len(expected)
    return list(zip(expected, leaves64, strict=False))


def _sample(pair: object) -> bool:
    """Whether ``pair`` is one of ``Output.handed``'s: [start, tensor]."""
    return isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and isinstance(pair[1], torch.Tensor)


def answer_made_before_kernels(
    made: list, trial, tolerance: Tolerance, starts: list | None = None, model: torch.nn.Module | None = None
) -> str:
    """'a tensor of the output's size' (or 'of output[i]'s') where one of ``made`` (samples of memory
    forward handed a launch of its kernels where it was not the kernels' work: ``handed.FirstHanded``;
    the hollow forward's, of tensors made before any kernel ran) holds that output tensor of the
    reference's, within the trials' tolerance, at the elements sampled; '' where none does. A sample is
    evidence only where what forward was given does not hold the answer at those same elements: an
    output that is constant there, or that one of the inputs (or of the reference ``model``'s parameters
    and buffers, which the solution's model is given), cast to the output's dtype, or its first or last
    bytes read in that dtype (``_byte_ends``), already holds there within that tolerance (an eval-mode
    batch norm of fresh statistics is its input; an RMS norm whose weight is near 1 at the sampled
    column is its input there) is not looked for: an honest kernel's zeroed buffer, or a copy of an input
    or a weight it then works on in place, would hold it."""
    expected, expected64 = tensor_leaves(trial.expected), trial.expected64
    leaves64 = tensor_leaves(expected64) if expected64 is not None else [None] * len(expected)
    starts_ = starts if starts is not None else [None] * len(made)
    state = list(model.state_dict().values()) if model is not None else []
    for i, (e, e64) in enumerate(zip(expected, leaves64, strict=False)):
        if not e.numel():
            continue
        given = [x for x in [*tensor_leaves(trial.inputs), *state] if x.numel() == e.numel()]
        ends: list | None = None
        for t, s in zip(made, starts_, strict=True):
            if not _holds(t, e, e64, tolerance, sampled=True, start=s):
                continue  # the samples first (a trial's every one): the inputs' checks only for a match
            at = _sampled(e, e.numel(), s)
            ends = _byte_ends([*tensor_leaves(trial.inputs), *state], e) if ends is None else ends
            if _constant(at) or any(_holds(_sampled(x, e.numel(), s), e, e64, tolerance, sampled=True, start=s)
                                    for x in [*_cast(given, e.dtype), *ends]):  # fmt: skip
                continue
            return "a tensor of the output's size" if len(expected) == 1 else f"a tensor of output[{i}]'s size"
    return ""


def _byte_ends(tensors: list, e: torch.Tensor) -> list:
    """Of each of ``tensors`` (what forward was given) other than one of ``e``'s size and dtype, the first
    and the last of its bytes an output ``e`` takes, read in ``e``'s dtype: what ``handed.FirstHanded``
    samples of such a tensor handed whole (red team 16 #1b); a weight whose own bytes hold an output
    there is no evidence against the kernels."""
    size, found = e.numel() * e.element_size(), []
    for x in tensors:
        if (x.numel() == e.numel() and x.dtype == e.dtype) or x.numel() * x.element_size() < size:
            continue
        raw = x.detach().contiguous().reshape(-1).view(torch.uint8)
        found += [raw[:size].clone().view(e.dtype), raw[raw.numel() - size :].clone().view(e.dtype)]
    return found


def _sampled(t: torch.Tensor, numel: int, start: int | None) -> torch.Tensor:
    """The elements of ``t`` (of ``numel`` elements) that a sample holds: from ``start`` on, every
    ``handed.stepped_sample``-th, or without a start those ``runner.answer_sample`` picks."""
    flat = t.reshape(-1)
    if start is not None:
        return flat[start :: stepped_sample(numel)]
    return flat[answer_sample(numel).to(flat.device)]


def _cast(tensors: list, dtype: torch.dtype) -> list:
    """``tensors`` in ``dtype`` (an input in float32 where the output is float16 holds it as a cast would)."""
    cast = []
    for t in tensors:
        try:
            cast.append(t if t.dtype == dtype else t.to(dtype))
        except (RuntimeError, TypeError):
            continue
    return cast


def _holds(
    flat: torch.Tensor, e: torch.Tensor, e64, tolerance: Tolerance, sampled: bool = False, start: int | None = None
) -> bool:
    """Whether ``flat``'s elements are the output ``e``'s, in order, within the trials' tolerance;
    ``sampled``: ``flat`` holds only the elements ``runner.answer_sample`` picks (with a ``start``: those
    from there on, every ``handed.stepped_sample``-th), compared with those."""
    if flat.dtype != e.dtype or (flat.numel() != e.numel() and not sampled):
        return False
    try:
        e, e64 = e.reshape(-1), (e64.reshape(-1) if isinstance(e64, torch.Tensor) else None)
        if start is not None:
            step = stepped_sample(e.numel())
            if not 0 <= start < step:
                return False
            e, e64 = e[start::step], (e64[start::step] if e64 is not None else None)
            if flat.numel() != e.numel():
                return False
        elif sampled:
            picked = answer_sample(e.numel())
            if flat.numel() != picked.numel():
                return False
            e, e64 = e[picked.to(e.device)], (e64[picked.to(e64.device)] if e64 is not None else None)
        return compare_outputs(flat.to(e.device), e, e64, tolerance).ok
    except Exception as exc:  # a copy that cannot be compared holds no answer
        if is_out_of_memory(exc):
            raise
        return False


def _constant(t: torch.Tensor) -> bool:
    flat = t.reshape(-1)
    return bool((flat == flat[0]).all()) or (t.is_floating_point() and bool(torch.isnan(flat).all()))


def output_still_correct(value, trial, tolerance: Tolerance) -> bool:
    """Whether a runner's output (of a forward whose Triton launches did not run) matches the reference."""
    if value is None:
        return False
    try:
        return compare_outputs(value, trial.expected, trial.expected64, tolerance).ok
    except Exception as exc:  # an answer that cannot even be compared is not a correct one
        if is_out_of_memory(exc):  # but the judge's own memory running out is the judge's failure
            raise
        return False


def whole_gpu_early(reference: Reference, ctx: WorkerContext, float64: bool) -> bool:
    """Whether a job is too large to share its GPU (memory.needs_whole_gpu) by the problem's sizes on
    the meta device (Reference.meta_footprint), known before its first trial: the trial (its inputs,
    the reference's output and float64 copy) is then made under the exclusive hold too, instead of
    beside the other judges' jobs (KernelBench level 1's 87_conv_pointwise_2D, 4 GiB in and 8 GiB
    out, left a judge beside it 3.3 GiB). False on the CPU, with one judge per GPU, or where the meta
    device cannot run the problem (its first trial's sizes decide, as before)."""
    if ctx.device.type != "cuda" or ctx.judges_per_gpu <= 1:
        return False
    estimate = reference.meta_footprint(float64)
    total = torch.cuda.get_device_properties(ctx.device).total_memory
    return estimate is not None and needs_whole_gpu(estimate, total, ctx.judges_per_gpu)


def evaluate(state: JobState) -> dict:
    with contextlib.ExitStack() as hold:  # this GPU's lock, held alone from the first trial by a job too large
        return _evaluate(state, hold)  # to share it (whole_gpu_early), let go whatever ends the job


def _evaluate(state: JobState, hold: contextlib.ExitStack) -> dict:
    job, ctx = state.job, state.ctx
    tolerance = Tolerance(job.tolerance, job.error_factor, job.scale_floor, job.atol, job.rtol)
    result: dict[str, Any] = {"device": describe_device(ctx.device), "versions": versions()}
    count = state.trials = max(job.trials, MIN_TRIALS)
    private = Path(ctx.home) / "judge" / secrets.token_hex(8)
    private.mkdir(parents=True, mode=0o700)
    try:
        with state.timed("reference"):
            with gpu_lock(ctx.gpu_lock, exclusive=False):
                torch.manual_seed(secrets.randbits(63))
                reference = Reference(job.problem_source, job.entry_point, private / "reference.py", ctx.device,
                                      float64=job.tolerance == "float64")  # fmt: skip
            if whole_gpu_early(reference, ctx, job.tolerance == "float64"):
                hold.enter_context(gpu_lock(ctx.gpu_lock, exclusive=True))
            with gpu_lock(ctx.gpu_lock, exclusive=False):  # a no-op inside the exclusive hold
                key = problem_key(job.problem_source, job.entry_point)
                if ctx.device.type == "cuda" and not ctx.queues.known(key):  # once per problem: on how many streams?
                    watch = StreamWatch(ctx.device)
                    trial = reference.trial(secrets.randbits(63), watch)
                    ctx.queues.decide(key, watch.streams)
                    state.stages["reference_streams"] = len(watch.streams) if watch.streams is not None else -1
                else:
                    trial = reference.trial(secrets.randbits(63))
                state.queues = ctx.queues.for_problem(key)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    # shrunk for the interpreter, one size is not enough: the last trial is at a second size, drawn then
    state.second_due = ctx.device.type == "cpu" and has_second_size(job.problem_source, job.shrunk)
    count = state.trials = count + state.second_due
    result["trials"] = count
    state.footprint = Footprint.of(reference.model, trial.inputs, trial.expected, reference.model64 is not None,
                                   mutates=trial.inputs_after is not trial.inputs)  # fmt: skip
    on_host = reference.model64 is not None and reference.float64_device.type == "cpu"
    ctx.channel.send({"host_bytes": judge_host_bytes(state.footprint, ctx.device, on_host)})
    if reference.float64_note:
        tolerance = Tolerance("fixed", atol=tolerance.atol, rtol=tolerance.rtol)
    whole = ctx.device.type == "cuda" and needs_whole_gpu(
        state.footprint, torch.cuda.get_device_properties(ctx.device).total_memory, ctx.judges_per_gpu
    )
    first, trial = [trial], None  # held by the list alone: run_trials drops it once judged
    with gpu_lock(ctx.gpu_lock, exclusive=True) if whole else contextlib.nullcontext():  # a no-op if held already
        return judge_candidate(state, reference, first, tolerance, result)


def judge_candidate(
    state: JobState, reference: Reference, first: list[Trial], tolerance: Tolerance, result: dict
) -> dict:
    """The stages from import on: the candidate in its runner, against the first trial (``first``)
    and the rest."""
    job, ctx = state.job, state.ctx
    with state.timed("import"):
        source = Path(job.candidate_path).read_text(encoding="utf-8")
        state.kernels = check_text(source, job.candidate_path, job.static_checks)
        # a runner's start is covered (none could be forked while another judge timed: one is, once it
        # ends), and the spare's cover ends before take reads its Hello (a spare still starting gets a
        # moment more under it; take itself gives up a stopped one at once)
        waited = time.perf_counter()
        ctx.queues.predicted = state.queues  # the spare forked next (this job's too, where it needs one)
        unfit = ctx.supply.unfit_spare(state.queues)  # one queue, for a problem with work on several streams
        if unfit is not None:
            end_covered(ctx.gpu_lock, lambda: (unfit.kill(), lambda timeout_s: gone(unfit.pid, timeout_s))[1])
            state.stages["runner_unfit_spare"] = 1
        replenish(ctx)
        settle(ctx.gpu_lock, block=True, timeout_s=TAKE_COVER_S)
        try:
            state.runner = ctx.supply.take(state.deadline, queues=state.queues)
        except RunnerLost as exc:
            raise Failure(Verdict.INFRASTRUCTURE_ERROR, f"No runner could be started: {exc}.") from None
        # of the import, the wait for its runner (a spare still starting, or none: forked now) and how its start went
        state.stages["runner_wait"] = round(time.perf_counter() - waited, 4)
        state.stages |= state.runner.start_seconds
        if ctx.device.type == "cuda":  # 1 where its CUDA context has one work queue (work_queues.py)
            state.stages["runner_one_queue"] = int(state.runner.queues == 1)
        replenish(ctx, wait=False)  # the next job's runner warms up (its CUDA context) while this one runs
        workdir = state.runner.directory  # the runner's own, the only one it may write in (landlock.py)
        candidate = workdir / Path(job.candidate_path).name
        candidate.write_text(source, encoding="utf-8")
        if state.runner.uid:
            os.chown(candidate, state.runner.uid, state.runner.uid)
        state.runner.memory_limit = runner_host_limit(job.memory_limit_mb << 20, state.footprint)
        size = state.footprint
        state.runner.gpu_limit = runner_gpu_limit(job.memory_limit_mb << 20, size.inputs, size.outputs, size.params)
        if ctx.nvml_pids:
            state.runner.gpu_readings = ctx.nvml.processes
        lifetime = max(state.deadline - time.monotonic(), 0.0) + 30.0
        if state.second_due or ctx.device.type == "cuda":  # the deadline may move by the timeout at most:
            lifetime += job.timeout_s  # the second size's allowance (CPU), the judge's own work and waits (GPU)
        # the runner's RLIMIT_CPU (the same budget) stops it alone first; this counts its compiler tools too
        state.runner.cpu_limit_s = cpu_budget_s(state.runner.cpu_seconds(), lifetime) + CPU_LIMIT_GRACE_S + 1
        load = p.Load(str(candidate), job.solution_class, str(workdir), state.runner.memory_limit, lifetime)
        with gpu_lock(ctx.gpu_lock, exclusive=False):  # candidate code may run GPU work at import
            state.ask(load, (p.Loaded,))
    with state.timed("build"), gpu_lock(ctx.gpu_lock, exclusive=False):
        build_model(state, reference, len(first[0].inputs))
    with state.timed("correctness"):
        outcome, trial = run_trials(state, reference, first, tolerance)
    if state.second_notes:
        result["findings"] = [*result.get("findings", []), *state.second_notes]
    if state.second is not None:  # the guards run on the last trial: the second size's
        tolerance = state.second.tolerance(tolerance)
    for ref in (reference, state.second.reference if state.second is not None else None):
        if ref is not None and ref.float64_note:  # a trial without a float64 output: fixed tolerances
            finding = {"check": "tolerance", "message": ref.float64_note + "; used fixed tolerances"}
            result["findings"] = [*result.get("findings", []), finding]
    result |= {"verdict": outcome.verdict, "feedback": outcome.feedback, "trials_passed": outcome.passed}
    result["errors"] = outcome.errors
    if outcome.verdict is not Verdict.OK:
        return result
    with state.timed("guards"), gpu_lock(ctx.gpu_lock, exclusive=False):  # forwards on the GPU
        current = state.second.reference if state.second is not None else reference
        last, trial = [trial], None
        result["findings"] = result.get("findings", []) + guard_findings(state, last, current, outcome.compute,
                                                                         tolerance)  # fmt: skip
    if ctx.device.type == "cuda" and (job.timing or job.profile):
        from tritongym.evaluate.judge.speed import speed_and_coverage

        trial = None  # timing and profiling draw input sets of their own: the trial's memory is the batch's
        wait = settle_s(ctx.queues.profile_ended, time.monotonic())  # CUPTI gone from the judge (work_queues.py)
        if wait > 0:
            time.sleep(wait)
            state.stages["cupti_settle"] = round(wait, 4)
        measured = speed_and_coverage(state, reference)
        # the runner's profile against the text and the judge's clock (where its timing is trusted)
        check_profile(state.kernels, measured if measured.get("speedup") is not None else
                      {k: v for k, v in measured.items() if k != "timing"})  # fmt: skip
        result["findings"] += measured.pop("findings", [])
        result |= measured
        result["feedback"] += speed_feedback(result)
    elif job.timing:
        result["feedback"] += " Timing unavailable on the CPU (Triton interpreter): no speedup was measured."
    return result


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.machine()}, Triton interpreter)"


def versions() -> dict[str, str]:
    import triton

    return {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}


def run_job(ctx: WorkerContext, job: Job, output_limit: int) -> dict:
    """One evaluation, as the result message's payload (never raises)."""
    state = JobState(job, ctx, time.monotonic() + job.timeout_s)
    start, waited, covered = time.perf_counter(), list(speed.lock_waited), dict(speed.covered)
    speed.on_wait = state.extend  # waits for this GPU's lock are other jobs' time, not the candidate's
    try:
        result = evaluate(state)
    except Failure as failure:
        if isinstance(failure, JudgeOutOfMemory):
            failure = blame_runner(state) or failure
        result = {"verdict": failure.verdict, "feedback": failure.feedback, "detail": failure.detail}
    except Exception as exc:  # the judge's own failure (a bug, or its memory ran out): never a bare traceback
        failure = blame_runner(state) if is_out_of_memory(exc) else None  # where its runner held too much
        if failure is None:
            if is_out_of_memory(exc):
                failure = judge_failure(exc, state.stage, ctx.device, state.footprint)
            else:
                failure = classify_failure(exc, "", f"in the judge during {state.stage}")
            failure.verdict = Verdict.INFRASTRUCTURE_ERROR
        result = {"verdict": failure.verdict, "feedback": failure.feedback, "detail": failure.detail}
    speed.on_wait = None
    if state.runner is not None:
        ending = time.perf_counter()
        if ctx.launchers is not None:  # what it missed, read before its directory goes with it
            state.stages["c_modules_built"] = ctx.launchers.after_job(state.runner.directory)
        runner = state.runner

        def end():
            runner.kill()
            return lambda timeout_s: gone(runner.pid, timeout_s)

        end_covered(ctx.gpu_lock, end)  # its CUDA context's end disturbs no timing that starts after it
        result["stdout"] = state.runner.stdout.text(output_limit, 1.0)
        result["stderr"] = state.runner.stderr.text(output_limit, 1.0)
        state.stages["runner_end"] = round(time.perf_counter() - ending, 4)  # of the total: killed, output read
    speed.let_go_kept(ctx.gpu_lock)  # a timing's hold kept for a runner's end that did not come
    for key in ("feedback", "detail"):
        if isinstance(result.get(key), str):
            result[key] = bounded(result[key])
    errors = result.get("errors")
    if errors is not None and not isinstance(errors, dict):
        from dataclasses import asdict

        result["errors"] = asdict(errors)
    state.stages["total"] = round(time.perf_counter() - start, 4)
    if ctx.gpu_lock >= 0:  # of the total, waiting for this GPU's lock (other judges' timing, runner starts)
        state.stages["gpu_lock_wait"] = round(speed.lock_waited[0] - waited[0], 4)
        state.stages["gpu_lock_wait_exclusive"] = round(speed.lock_waited[1] - waited[1], 4)
        for kind, before in covered.items():  # runners' starts and ends that held it shared meanwhile
            state.stages[f"gpu_lock_cover_{kind}"] = round(speed.covered[kind] - before, 4)
    result["stage_seconds"] = state.stages
    return json_safe(result)  # runner-derived text (feedback, output) may not even encode as UTF-8


def blame_runner(state: JobState) -> Failure | None:
    """The candidate's ``out_of_memory`` where the judge's own memory ran out while its runner held
    more GPU memory than its job allows (gpu_memory.Blame); None where it did not, could not be
    measured, or there is no runner (the judge's ``infrastructure_error`` stands). The runner's
    memory is NVML's count of its processes where NVML names them (``WorkerContext.nvml_pids``),
    else the device memory that its end gives back (it is killed: its job ends here either way)."""
    runner, ctx = state.runner, state.ctx
    if runner is None or ctx.device.type != "cuda":
        return None
    if runner.gpu_readings is not None:
        used, how = runner.gpu_bytes(), "NVML's count of its processes"
    else:
        with gpu_lock(ctx.gpu_lock, exclusive=False):  # its end disturbs no timing
            used = freed_by(lambda: torch.cuda.mem_get_info(ctx.device)[0], runner.kill_processes)
        how = "the device memory freed when it was killed"
    blame = Blame(used, runner.gpu_limit, how)
    return Failure(Verdict.OUT_OF_MEMORY, blame.feedback(state.stage)) if blame.candidates else None


def warm_up(device_name: str, lock_dir: str, ctx_args: dict, startup: Startup | None = None) -> WorkerContext:
    """Import what every job needs; on a GPU create the CUDA context, measure the copy bandwidth
    and open this GPU's timing lock (``startup``: its parts' seconds, ``contexts`` and ``calibration``)."""
    startup = startup or Startup()
    import tritongym.evaluate.compare
    import tritongym.evaluate.static_checks  # noqa: F401

    numerics.library_precision()  # the reference's native output at the precision the runners compute in
    device = torch.device(device_name)
    ctx = WorkerContext(device=device, **ctx_args)
    if device.type == "cuda":
        from tritongym.evaluate import timing
        from tritongym.evaluate.judge import holds, twin

        uuid = str(torch.cuda.get_device_properties(device).uuid)
        name = f"tritongym-gpu-{uuid}"  # one for every judge of this user on the machine (machine_lock.py)
        ctx.gpu_lock = machine_lock.open_lock(name, Path(lock_dir) / f"{name}.lock")
        # the CUDA contexts (the judge's, its twin's) are made under the shared lock, so as not to disturb
        # another judge's timing; the clean durations are measured with nobody else of ours on the GPU
        with speed.gpu_lock(ctx.gpu_lock, exclusive=False):
            ctx.twin = twin.Twin(torch.device("cuda", device.index or 0))  # started first, then the judge's context
            ctx.arena = speed.SharedArena(device)
            holds.load()  # the holds' kernel's first launch, before the exclusive lock
        startup.part("contexts")
        with speed.gpu_lock(ctx.gpu_lock, exclusive=True):
            ctx.copy_bandwidth = timing.copy_bandwidth(device)
            ctx.sleep_rate = speed.sleep_rate()
            holds = speed.Holds(ctx.sleep_rate)  # the brackets' holds (holds.py)
            ctx.hand_off_s = twin.calibrate(ctx.twin, holds)
            ctx.flush_s, ctx.probe_s = speed.calibrate_workloads(device, holds)
            torch.cuda.synchronize(device)
        startup.part("calibration")
        ctx.judges_per_gpu = max(int(os.environ.get("TRITONGYM_JUDGES_PER_GPU", "1") or 1), 1)
        ctx.nvml = Nvml.open(uuid)  # the judge's context exists: NVML lists it under its pid, or under another
        ctx.nvml_pids = ctx.nvml is not None and ctx.nvml.sees(os.getpid())
        ctx.answer_limit = answer_limit(torch.cuda.get_device_properties(device).total_memory, ctx.judges_per_gpu)
    return ctx


class Startup:
    """Seconds each part of the judge's start took, from the previous part's end (its ``ready``
    message's ``startup_seconds``: where a pool's start goes)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def part(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._last, 4)
        self._last = now


def main() -> None:
    startup = Startup()
    init = json.loads(sys.stdin.readline())
    die_with_parent(init["parent_pid"])
    prctl(PR_SET_DUMPABLE, 0)  # no unprivileged process (a runner) may read or trace the judge
    channel = Channel(init["channel_fd"])
    home = Path(init["home"])
    import triton.language  # noqa: F401 - imported once here, shared by the zygote forked next

    cache, scratch = home / "runner-triton", home / "runner-tmp"  # runners' own: the judge's are not theirs
    for path in (cache, scratch):
        path.mkdir(mode=0o700)
    runner_env = {"TRITON_CACHE_DIR": str(cache), "TMPDIR": str(scratch), "HOME": str(scratch),
                  "TRITONGYM_RUNNERS_HOME": str(home)}  # fmt: skip
    launchers = LauncherStore(init.get("launcher_store", ""), init["device"], dict(os.environ))
    runner_env |= launchers.runner_env  # runners read Triton's C modules from the store and never write it
    jobs = home / "jobs"  # each runner's directory (its job's): nothing of the judge's is beneath
    jobs.mkdir(mode=0o711)
    supply = RunnerSupply(init["device"], dict(os.environ) | runner_env, str(home), jobs)
    for uid in set(supply.uids) - {0}:  # each runner user's own cache and scratch (zygote.drop_privileges)
        kill_user(uid)  # anything left by an earlier judge that had this pid
        for path in (home / f"runner-{uid}", home / f"runner-{uid}" / "triton", home / f"runner-{uid}" / "tmp"):
            path.mkdir(mode=0o700)
            os.chown(path, uid, uid)
    supply.launch()
    startup.part("imports")
    override = parse_override(os.environ.get(OVERRIDE_ENV)) if init["device"] != "cpu" else JUDGES_OWN
    queues = QueueChoice(override)  # decided per problem on a GPU, unless the pool set a number
    ctx_args = {"channel": channel, "supply": supply, "home": home, "launchers": launchers, "queues": queues}
    ctx = warm_up(init["device"], init["lock_dir"], ctx_args, startup)
    launchers.wait_ready()  # cuda_utils is in the store before the first runner is forked
    supply.zygote.wait_started()
    startup.part("zygote")
    if ctx.device.type == "cuda" and torch.version.hip is None:
        major, minor = torch.cuda.get_device_capability(ctx.device)
        supply.zygote.warm(10 * major + minor)
        startup.part("compiler_warmth")
    replenish(ctx)
    startup.part("first_spare")
    ready: dict[str, Any] = {"device": describe_device(ctx.device), "versions": versions()}
    ready["startup_seconds"] = startup.seconds
    ready["runners_unprivileged"] = runners_unprivileged(init["device"])
    if ctx.device.type == "cpu":
        from tritongym.evaluate.selftest import interpreter_problem

        ready["unusable"] = interpreter_problem()
    settle_heap()  # each job's collection (memory.release) walks that job's objects, not the start's
    channel.send({"ready": ready})
    for line in sys.stdin:
        message = json.loads(line)
        channel.nonce = message.pop("nonce")
        output_limit = message.pop("output_limit_bytes")
        result = run_job(ctx, Job.from_dict(message), output_limit)
        release(ctx.device)  # the job's memory goes back to the device before the next job
        channel.send({"result": result})
        replenish(ctx)  # if this job took none (refused before running), the spare is still there
    supply.close()
    launchers.close()
    if ctx.twin is not None:
        ctx.twin.close()
    os._exit(0)
