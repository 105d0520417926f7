"""The runner: the process that imports one candidate and executes it, nothing more.

Forked from the zygote (zygote.py) and hardened there; it then warms up (the CUDA context on a GPU),
says Hello and waits for its candidate. It answers the judge's messages (protocol.py) until it is
killed; it never serves a second candidate. Everything here runs in the candidate's process, so
everything here can be read and changed by the candidate: the judge treats the answers as claims to
check, and the guard reports (launch counts, PyTorch ops, tampering, threads) as the runner's word
(docs/environment.md, "Threat model").
"""

from __future__ import annotations

import collections
import contextlib
import gc
import importlib.util
import inspect
import math
import os
import resource
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils._python_dispatch import _disable_current_modes

from tritongym.evaluate import placement, races
from tritongym.evaluate.guards import (
    CandidateText,
    LaunchMonitor,
    OpRecorder,
    OpWitness,
    aliasing,
    count_profiler_switches,
    count_thread_starts,
    poison_free_memory,
    refuse_audit_hooks,
    thread_starts,
    unrecorded_compute,
)
from tritongym.evaluate.judge import compiler_helper, landlock, seccomp
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure, candidate_location, classify_failure, detail, short
from tritongym.evaluate.judge.handed import FirstHanded, addressed, extent, nearest, numeric
from tritongym.evaluate.judge.tree import map_tensors, tensor_leaves
from tritongym.evaluate.judge.zygote import PR_SET_DUMPABLE, drop_capabilities, prctl
from tritongym.evaluate.placement import HostReads, HostTensors, candidate_code, launch_pointers
from tritongym.evaluate.result import Verdict

RUNNER_CPU_CORES = 2
"""CPU time a runner may use, in cores' worth over its lifetime (its job's deadline and a margin):
``RLIMIT_CPU``, set when the job is loaded. Threads are allowed (and joined ones before forward are
nobody's business), so without it a runner could take every core of the host for its whole deadline
from the other evaluations running beside it (red team 7 #2); with it, at most this many cores on
average, and a burst over more cores only for as long as that budget lasts."""
CPU_LIMIT_GRACE_S = 2
"""CPU seconds between the soft limit (SIGXCPU, which says why) and the hard one (SIGKILL)."""
MAX_INPUT_BYTES = 1 << 40
"""The judge is trusted: what it sends is bounded by its own memory."""
RELEASE_BYTES = 1 << 30
"""After a call whose inputs are at least this large, the runner's cached GPU memory is given back."""
MAX_NAME = 200
"""Longest name (thread, op, kernel, attribute) the runner reports: names are the candidate's to
choose, and a report too large for the protocol would turn the verdict it supports into a crash."""
MAX_NAMES = 64
"""Most names of one kind in a report (the most frequent ops first)."""
IN_FORWARD = "{where}"
"""Placeholder in a failure's feedback that the judge replaces with the call it knows (trial n)."""


def watchdog(parent: int, lifetime: list[float]) -> None:
    """End the process when its parent (the zygote) is gone or its lifetime is over: the judge's
    kill and the parent-death signal are the first lines, this is the last."""

    def run() -> None:
        while True:
            time.sleep(0.25)
            if os.getppid() != parent or time.monotonic() > lifetime[0]:
                os._exit(70)

    threading.Thread(target=run, name="tritongym-runner-watchdog", daemon=True).start()


def runner_cores(allowed: set[int], pid: int, count: int = RUNNER_CPU_CORES) -> set[int]:
    """The cores a CPU runner may run on: ``count`` consecutive ones of those ``allowed`` (the pool's),
    the window starting where its pid says, so that runners started one after another spread."""
    ordered = sorted(allowed)
    if len(ordered) <= count:
        return set(ordered)
    start = pid % len(ordered)
    return {ordered[(start + i) % len(ordered)] for i in range(count)}


def confine_cores(count: int = RUNNER_CPU_CORES) -> set[int]:
    """Pin every thread of this process to ``runner_cores`` (threads started later inherit it): with
    the CPU-time budget bounding a runner's average, this bounds its burst, which could otherwise take
    every core of the host from the evaluations beside it for as long as its budget lasts (red team
    7's open item). Called before the seccomp filter, which refuses changing it afterwards."""
    cores = runner_cores(os.sched_getaffinity(0), os.getpid(), count)
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError, ValueError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task), cores)
    return cores


def cpu_budget_s(used_s: float, lifetime_s: float) -> float:
    """The CPU time a runner may reach: what it used before its job plus RUNNER_CPU_CORES cores' worth
    over its lifetime."""
    return used_s + RUNNER_CPU_CORES * max(lifetime_s, 1.0)


def limit_cpu_time(lifetime_s: float) -> None:
    """Bound this process's CPU time (every thread's) to ``cpu_budget_s``; never above a hard limit it
    already has. The judge bounds the same budget plus the grace for the runner and its compiler
    helper's tools together (``runners.tree_cpu_seconds``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(cpu_budget_s(usage.ru_utime + usage.ru_stime, lifetime_s))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, max(hard - CPU_LIMIT_GRACE_S, 1))
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        return
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + CPU_LIMIT_GRACE_S))


class Runner:
    def __init__(self, sock: socket.socket, device: torch.device, lifetime: list[float]):
        self.sock, self.device, self.lifetime = sock, device, lifetime
        self.pid = os.getpid()
        self.model = None
        self.cls = None
        self.path = ""
        self.text: CandidateText | None = None
        self.slots = None
        self.output_layout = None
        self.go = self.done = None
        self.answered = None
        """On the CPU, the last trial's output, kept allocated until the next call or the hollow forward
        has run (MadeBeforeKernels)."""
        self.waiting: tuple[list, int] | None = None
        """The last trial's or hollow forward's samples not the kernels' work, and how many per output the
        judge is sent (``expected``): until the next message."""
        self.host = HostTensors() if device.type == "cpu" else None
        """On the CPU, what the candidate's import and forwards make where a GPU would hold it in host
        memory (placement.py): a kernel argument among it fails the launch as on a GPU."""
        self.reads: HostReads = self.host if self.host is not None else HostReads()
        """What counts the bytes of device memory each forward copies to the host (``Output.host_bytes``):
        on the CPU the marks' watch, on a GPU a watch of CUDA tensors' reads (placement.HostReads)."""

    def send(self, message: p.Message) -> None:
        if os.getpid() != self.pid:  # a fork of the candidate's that came back this far: not the runner
            os._exit(0)
        p.send(self.sock, message)

    def fail(self, failure: Failure) -> None:
        self.send(p.Failed(str(failure.verdict), failure.feedback, failure.detail))

    def ping(self, message: p.Ping) -> None:
        self.send(p.Pong())

    # -- loading -------------------------------------------------------------------------------

    def load(self, job: p.Load) -> None:
        self.lifetime[0] = time.monotonic() + job.lifetime_s
        if self.device.type == "cpu" and job.memory_limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (job.memory_limit_bytes, resource.RLIM_INFINITY))
        limit_cpu_time(job.lifetime_s)
        os.chdir(job.workdir)
        os.environ["HOME"] = os.environ["TMPDIR"] = job.workdir
        # Triton's compile cache is the job's own, removed with it: a compiled kernel planted by an
        # earlier candidate under the key of a later one's kernel is never loaded
        os.environ["TRITON_CACHE_DIR"] = os.path.join(job.workdir, "triton-cache")
        # Inductor's too (a candidate's torch.compile-made code): its default is fixed the first time any
        # process of the pool asked (torch._inductor's cache_dir() writes it into the environment)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(job.workdir, "inductor-cache")
        tempfile.tempdir = None  # the warm-up's scratch directory is not the job's
        self.path = job.candidate_path
        # before any of it runs: what its own kernels are, compiled as the import compiles them
        self.text = CandidateText.read(job.candidate_path, candidate_code if self.host is not None else None)
        from tritongym.evaluate.taint import ProcessState

        self.baseline = ProcessState(self.device)
        self.reads.own_code.take()  # Triton's and the judge's code as loaded before any of the candidate's runs
        self.cls = self._import(job)
        self.send(p.Loaded())

    def _import(self, job: p.Load):
        try:
            spec = importlib.util.spec_from_file_location("candidate", job.candidate_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["candidate"] = module
            if self.host is None:
                spec.loader.exec_module(module)
            else:  # a module's tensors too; the device named as a GPU's run names it (candidate_code)
                text = Path(job.candidate_path).read_text(encoding="utf-8", errors="replace")
                code = candidate_code(text, job.candidate_path)
                with self.host:
                    exec(code, vars(module))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt raised by candidate code too
            where = candidate_location(exc, job.candidate_path)
            raise Failure(
                Verdict.IMPORT_ERROR,
                f"Importing the solution failed: {short(exc)}" + (f" ({where})" if where else ""),
                detail(exc),
            ) from None
        cls = getattr(module, job.class_name, None)
        if cls is None:
            classes = [n for n, v in vars(module).items() if inspect.isclass(v) and v.__module__ == "candidate"]
            found = f" (classes defined: {', '.join(classes)})" if classes else " (it defines no class)"
            raise Failure(Verdict.INTERFACE_ERROR, f"The solution defines no class `{job.class_name}`{found}.")
        if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
            raise Failure(Verdict.INTERFACE_ERROR, f"`{job.class_name}` must be a subclass of torch.nn.Module.")
        return cls

    def build(self, job: p.Build) -> None:
        if self.device.type == "cpu" and job.memory_limit_bytes:  # the second size's, drawn after the load
            with contextlib.suppress(ValueError, OSError):  # a hard limit lowered by the candidate: its own
                resource.setrlimit(resource.RLIMIT_AS, (job.memory_limit_bytes, resource.RLIM_INFINITY))
        cls = self.cls
        name = cls.__name__
        args, kwargs = list(job.init_args), dict(job.init_kwargs)
        error = _signature_error(cls.__init__, args, kwargs, f"{name}.__init__")
        error = error or _signature_error(cls.forward, [None] * job.arg_count, {}, f"{name}.forward")
        if error:
            raise Failure(Verdict.INTERFACE_ERROR, error)
        args, kwargs = self.to_device(args), self.to_device(kwargs)
        try:
            # launches in the constructor pass Triton's frontend too (under the interpreter), counted nowhere
            monitor = LaunchMonitor(self.path, text=self.text, host=self.host)
            # on the CPU, what ignores the device context (legacy constructors, NumPy's memory) is marked
            # as the host memory it is on a GPU too (placement.py); the factories are placed by it
            host = self.host.watching(factories=False) if self.host is not None else contextlib.nullcontext()
            torch.manual_seed(job.seed)  # the generators' state the reference's constructor ran from
            with torch.device(self.device), monitor, host:
                model = cls(*args, **kwargs)
            race = getattr(monitor, "race", None)  # a monitor the candidate replaced has none: its word
            if race is not None:  # caught in the constructor: what it made is the GPU's racy result
                raise race
            model = model.to(self.device).eval()
            if self.host is not None:  # model.to moves its parameters and buffers to a GPU
                self.host.placed_state(model)
        except BaseException as exc:
            raise classify_failure(exc, self.path, f"while constructing {name}") from None
        target = model.state_dict(keep_vars=True)
        with torch.no_grad():
            for key, value in job.state.items():
                slot = target.get(key)
                if isinstance(slot, torch.Tensor) and isinstance(value, torch.Tensor) and slot.shape == value.shape:
                    slot.copy_(value.to(device=slot.device, dtype=slot.dtype))
        self.model = model
        self.send(p.Loaded())

    def to_device(self, value):
        return map_tensors(value, lambda t: t.to(self.device))

    def inputs(self, message: p.Call | p.Fallback | p.Hollow | p.Profile) -> list:
        """A call's inputs: in the judge's input slots (call 0 of them, each a tensor of its own:
        speed.own_storage) where it says so, else the tensors it sent, on the device."""
        if not message.in_slots:
            return self.to_device(message.args)
        from tritongym.evaluate.judge.speed import fill, handed

        ins, _, shape = self.slots
        return fill(shape, handed(ins, 0))

    # -- calls ---------------------------------------------------------------------------------

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def call(self, message: p.Call) -> None:
        self.answered = None  # freed before the GPU's free memory is poisoned
        try:
            given = self.inputs(message)
            if message.poison and self.device.type == "cuda":
                poison_free_memory(self.device, [t.nbytes for t in tensor_leaves(given)] * 2)
        except BaseException as exc:  # the GPU is full: the solution's process holds what it allocated
            raise classify_failure(exc, self.path, "while the inputs were copied to the GPU, before forward") from None
        # on the CPU what forward allocates with empty holds the poison, as a GPU's free memory does (a
        # fresh host allocation is often zeros: an accumulator never zeroed was right by chance)
        # forward's inputs and weights are looked at too: an answer parked in an input's storage, or a
        # parameter's, and put back after (red team 15 #5d); they are never the kernels' work, and one
        # an input or a weight holds as given is not looked for by the judge
        weights = [*self.model.parameters(), *self.model.buffers()]
        handed = FirstHanded(message.answers, [*tensor_leaves(given), *weights])
        recorder = OpRecorder(poison_empty=self.device.type == "cpu", moved=handed.moved)
        witness = OpWitness()
        host = self.host  # on the CPU, a kernel argument a GPU would hold in host memory fails the launch
        reads = self.reads  # the CPU's HostTensors too: forward's copies of device memory to the host
        reads.host_bytes = 0
        started = thread_starts()
        reach = LaunchReach(handed.see)
        monitor = LaunchMonitor(self.path, recorder, text=self.text, host=host, handed=reach.see)
        try:
            with (
                witness,
                monitor,
                torch.no_grad(),
                recorder,
                reads,
            ):
                got = self.model(*given)
                self.synchronize()
                # Everything that reads the output or the model may run candidate code (an override of
                # named_parameters, a container's __iter__) that could still write the output: it
                # runs here, watched like forward. Past this block no candidate code runs before the
                # answer is sent.
                alias = aliasing(got, given, self.model) or ""
                strides = [[int(x) for x in t.stride()] for t in tensor_leaves(got)]
                reached = reach.report(tensor_leaves(given), tensor_leaves(got))
                answered = message.out_slots and self.output_in_slots(got)
                sent = None if answered else frozen(got, handed)
        except BaseException as exc:
            replaced = interpreter_tampering(monitor)  # what it replaced may be what failed: that comes first
            if replaced:
                raise Failure(Verdict.HACK_TAMPERING, f"The solution tampered with the judge: {replaced[0]}.") from None
            raise classify_failure(getattr(monitor, "race", None) or exc, self.path, IN_FORWARD) from None
        race = getattr(monitor, "race", None)  # a monitor the candidate replaced has none: its word, as ever
        if race is not None:  # raised in forward and caught there: the GPU's racy answer is forward's
            raise classify_failure(race, self.path, IN_FORWARD)
        samples = handed.copies()  # read on the host once forward's watch is over; ranked on the judge's word
        # PyTorch's ops, those hidden from the recorder, and kernels of Triton not of the solution's file
        compute = collections.Counter(recorder.compute) + unrecorded_compute(recorder, witness) + monitor.foreign
        threads = [clip(name) for name in self.baseline.stray_threads()]
        stray = [f"threads still running: {', '.join(threads[:5])}"] if threads else []
        started = thread_starts() - started
        if started:  # joined or not: PyTorch ops on another thread escape the op recorder
            stray.append(f"forward started {started} thread(s)")
        self.send(
            p.Output(
                value=sent,  # None where the judge reads its output slots
                out_slots=answered,
                inputs_after=None if message.in_slots else given,  # the judge reads its input slots
                launches=monitor.launches,
                off_stream=monitor.off_stream + sum(recorder.off_stream.values()),
                off_stream_ops=[clip(name) for name in sorted(recorder.off_stream)[:MAX_NAMES]],
                compute=clipped_counts(compute),
                tampering=[clip(reason, 1000) for reason in self.baseline.tampering()]
                + (["stopped the profiler that records forward's PyTorch ops"] if witness.stopped else [])
                + interpreter_tampering(monitor),
                threads=stray,
                alias=alias,
                strides=strides,
                host_bytes=reads.host_bytes,
                handed=handed.waiting(samples),
                reach=reached,
            )
        )
        self.waiting = (samples, FirstHanded.PER_OUTPUT) if samples else None
        size = sum(t.nbytes for t in tensor_leaves(given))
        # on the CPU the answer stays allocated until the next call or the hollow forward (on inputs of
        # its own): a buffer allocated there below the dispatcher, which no poison reaches
        # (Inductor's empty_strided_cpu), must not be handed its memory, the very answer. A GPU poisons
        # its free memory before the hollow forward, and holds no output more than it must
        self.answered = got if self.device.type == "cpu" else None
        del given, got, sent
        self.release(size)

    def release(self, size: int) -> None:
        """Give a large call's cached GPU memory back, so that the judge can make the next trial (or the
        timing batch: after the guards' calls too)."""
        if self.device.type == "cuda" and size >= RELEASE_BYTES:
            torch.cuda.empty_cache()

    def output_in_slots(self, got) -> bool:
        """Copy forward's output into the judge's output slots, where it has the layout the judge
        attached (the reference's) and every tensor is a plain tensor of its slot's shape and dtype;
        False (the output goes in the message) where not. The device is synchronised before the copy
        (forward's work on every stream is done) and after it: the copy is complete when this
        returns True, before the answer."""
        from tritongym.evaluate.judge.speed import layout, same_layout

        outs = self.slots[1] if self.slots is not None else []
        leaves = tensor_leaves(got)
        if self.output_layout is None or len(leaves) != len(outs) or not same_layout(layout(got), self.output_layout):
            return False
        plain = (torch.Tensor, torch.nn.Parameter)  # what the socket carries as tensors
        if not all(
            type(t) in plain and t.shape == s.shape[1:] and t.dtype == s.dtype
            for t, s in zip(leaves, outs, strict=True)
        ):
            return False
        self.synchronize()
        with torch.no_grad():
            for slot, value in zip(outs, leaves, strict=True):
                slot[0].copy_(value)
        self.synchronize()
        return True

    def hollow(self, message: p.Hollow) -> None:
        keep: set[int] = set()
        held: set[int] = set()
        saved: list[tuple[torch.Tensor, torch.Tensor]] = []
        made = MadeBeforeKernels(message.answers)

        def skip(args: tuple, kwargs: dict) -> None:
            # every tensor the launch would reach: an argument, one in a tuple or list argument, a
            # tensor descriptor's base (the output a descriptor stores through: tensor_descriptor.py)
            named = [*enumerate(args), *kwargs.items()]
            for value in addressed([value for _, value in named], made.dtypes()):
                made.see(value)  # memory reached through an address it is handed (red team 19 #13): seen, as is
            for _, value in launch_pointers(named):
                made.see(value)  # before the poison: what forward put there (an input or weight too), no kernel ran
                if value.untyped_storage().data_ptr() not in keep:
                    if value.untyped_storage().data_ptr() in held:
                        saved.append((value, value.clone()))
                    poison(value, message.other_poison)

        given = None
        try:
            given = self.inputs(message)
            keep |= {t.untyped_storage().data_ptr() for t in tensor_leaves(given)}
            # the weights are never poisoned; a buffer is, where a launch would write it (an honest kernel's
            # output buffer held the last call's answer, for these very inputs: red team 11 #5), and it is
            # put back after the answer, as every kept tensor is
            keep |= {t.untyped_storage().data_ptr() for t in self.model.parameters()}
            kept = [t for t in live_tensors() if storage_address(t) not in keep]
            held |= {storage_address(t) for t in kept}
            made.before(kept)
            if self.device.type == "cuda":  # no free block holds an earlier answer (the CPU poisons `empty`'s)
                poison_free_memory(self.device, [t.nbytes for t in tensor_leaves(given)] * 2)
            poisoning = OpRecorder(poison_empty=self.device.type == "cpu")
            with LaunchMonitor(self.path, skip=skip, text=self.text), torch.no_grad(), poisoning:
                got = self.model(*given)
                self.synchronize()
                answered = message.out_slots and self.output_in_slots(got)
                got = None if answered else frozen(got)
        except BaseException:
            got, answered = None, False
        self.send(p.HollowResult(value=None if answered else got, out_slots=answered, made=len(made.copies)))
        self.waiting = (made.copies, MadeBeforeKernels.PER_OUTPUT) if made.copies else None
        self.answered = None
        with torch.no_grad():  # the calls after this one (timing) see the state the trials left
            for tensor, copy in reversed(saved):
                tensor.copy_(copy)
        self.synchronize()
        size, given, got, saved = _bytes(given), None, None, []
        self.release(size)

    def expected(self, message: p.Expected) -> None:
        """The samples waiting, per output those nearest the reference's output (``handed.nearest``)."""
        waiting, self.waiting = self.waiting, None
        references = message.references if isinstance(message.references, list) else []
        self.send(p.Handed(samples=nearest(waiting[0], references, waiting[1]) if waiting is not None else []))

    def fallback(self, message: p.Fallback) -> None:
        given = None
        try:
            given = self.inputs(message)
            with LaunchMonitor(self.path, block=True, text=self.text), torch.no_grad():
                self.model(*given)
            self.synchronize()
        except BaseException:
            self.send(p.FallbackResult(returned=False))
        else:
            self.send(p.FallbackResult(returned=True))
        size, given = _bytes(given), None
        self.release(size)

    def profile(self, message: p.Profile) -> None:
        from tritongym.evaluate.profiling import profile_forward

        try:
            attribution = profile_forward(self.model, self.inputs(message), self.path, self.device, self.text)
        except BaseException as exc:
            raise classify_failure(exc, self.path, "in forward (during profiling)") from None
        coverage = -1.0 if attribution.coverage is None else attribution.coverage
        kernels = [k | {"name": clip(str(k.get("name", "")))} for k in attribution.kernels[:MAX_NAMES]]
        streams = [clip(str(x)) for x in attribution.foreign_streams[:MAX_NAMES]]
        self.send(p.ProfileResult(coverage, kernels, streams))

    def attach(self, message: p.Attach) -> None:
        from tritongym.evaluate.judge.speed import open_slots

        self.slots = open_slots(message, self.device)
        self.output_layout = message.output_layout  # a trial's output layout (None for a timing batch)
        if message.events:  # a timing batch's (a trial's input slots come without)
            device = torch.cuda.current_device()  # an index: the event's device is -1 for a bare "cuda"
            self.go, self.done = (torch.cuda.Event.from_ipc_handle(device, bytes.fromhex(h)) for h in message.events)
        self.send(p.Loaded())

    def batch(self, message: p.Batch) -> None:
        from tritongym.evaluate.judge.speed import run_batch

        stream = torch.cuda.current_stream(self.device)
        try:
            stream.wait_event(self.go)
            with torch.no_grad():
                run_batch(self.model, self.slots, message.count)
            self.done.record(stream)
        except BaseException as exc:
            raise classify_failure(exc, self.path, IN_FORWARD) from None
        self.send(p.BatchQueued())

    def serve(self) -> None:
        handlers = {p.Ping: self.ping, p.Load: self.load, p.Build: self.build, p.Call: self.call,
                    p.Fallback: self.fallback, p.Hollow: self.hollow, p.Expected: self.expected,
                    p.Profile: self.profile, p.Attach: self.attach, p.Batch: self.batch}  # fmt: skip
        while True:
            message = p.receive(self.sock, tuple(handlers), float("inf"), MAX_INPUT_BYTES)
            if type(message) is not p.Expected:
                self.waiting = None  # the samples wait for the judge's next message only
            try:
                handlers[type(message)](message)
            except Failure as failure:
                self.fail(failure)
                return


def frozen(got, handed: FirstHanded | None = None):
    """A copy of forward's output, made while forward's watch is still on: the output the judge compares.
    Candidate code can run after the watch closed and before the answer is sent (a ``__del__`` the
    garbage collector calls, a weakref's callback: red team 21 #1), where nothing records what it
    computes; what it writes into forward's tensors then is not in this copy. Tensors of other types
    than the socket's (a subclass) are left as they are: the answer refuses them. The copy is glue,
    not moved work (``handed``'s hook is quiet for it)."""
    plain = (torch.Tensor, torch.nn.Parameter)
    quiet = handed.quiet if handed is not None else False
    if handed is not None:
        handed.quiet = True
    try:
        return map_tensors(got, lambda t: t.detach().clone() if type(t) in plain else t)
    finally:
        if handed is not None:
            handed.quiet = quiet


def _bytes(value) -> int:
    return sum(t.nbytes for t in tensor_leaves(value))


def clip(name: str, limit: int = MAX_NAME) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def clipped_counts(names) -> dict[str, int]:
    """Counts of the most frequent names, each clipped (clipped names that collide add up)."""
    counts: collections.Counter[str] = collections.Counter()
    for name, count in collections.Counter(names).most_common(MAX_NAMES):
        counts[clip(str(name))] += count
    return dict(counts)


def live_tensors() -> list[torch.Tensor]:
    """Every tensor alive in this process (the garbage collector tracks each): whatever a solution
    keeps between calls, wherever it keeps it: a parameter or buffer of its modules (non-persistent
    ones too: a rotary table, a lookup table), a plain attribute (a cached transposed weight, a
    workspace, an output buffer it rewrites each call), a global, a class attribute, a
    ``functools.lru_cache``'s entry, an object of its own holding one. The hollow forward poisons
    those passed to a skipped launch as it poisons any buffer a launch would write, then puts their
    contents back once its answer is sent: later calls (timing) read what an honest solution left
    there, not the poison. A first version looked only where a solution's modules and globals hold
    tensors directly or in one container: an output buffer cached anywhere else held the last
    answer, unchanged, and was taken for one forward made (honest4). Types are read with ``type``,
    not ``isinstance``, which asks an object's own ``__class__``."""
    return [t for t in gc.get_objects() if issubclass(type(t), torch.Tensor)]


ANSWER_SAMPLE = 4096
"""Elements of a tensor the hollow forward's ``MadeBeforeKernels`` sends, evenly spaced: the judge
compares them with the same elements of the output (a whole copy of each, for a multi-GiB output on a
GPU, would cost its transfer and the judge's memory)."""


def answer_sample(numel: int) -> torch.Tensor:
    """The flat indices of the elements compared: ``ANSWER_SAMPLE`` evenly spaced ones, or every one."""
    if numel <= ANSWER_SAMPLE:
        return torch.arange(numel)
    return torch.linspace(0, numel - 1, ANSWER_SAMPLE, dtype=torch.float64).round().long()


def one_value(flat: torch.Tensor) -> bool:
    """Whether a flat tensor holds one value everywhere (NaN included), without a temporary of its size
    (an output may be most of the GPU)."""
    if flat.dtype is torch.bool:
        return bool(flat.all()) or not bool(flat.any())
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if flat.is_floating_point() and bool(torch.isnan(flat[0])):
        return bool(torch.isnan(flat).all())
    return bool(flat.amax() == flat.amin())


class MadeBeforeKernels:
    """The tensors a hollow forward passes to its skipped launches that hold what forward itself put
    there: of those of an output's size and dtype (``answers``: [numel, dtype] per output tensor), or of
    its size in another numeric dtype (cast to the output's), a copy of the elements ``answer_sample``
    picks, taken before the poison, every one (the judge is sent the ``PER_OUTPUT`` per output tensor
    nearest the reference's output: ``handed.nearest``; the latest four were sent before, and four
    decoys handed after the answer took their place, red team 19 #5) but those that hold one value
    everywhere (a zeroed or fresh buffer; a constant answer is not looked for). The
    model's kept tensors (a buffer, an attribute: an honest kernel's output buffer holds the last
    call's answer, for these very inputs) only where forward changed them before the launch
    (``before``: their contents when forward started). No kernel runs in a hollow forward, so
    whatever holds the answer there was computed by host code, NumPy or PyTorch, and the kernels
    only moved it (red team 13 #6)."""

    PER_OUTPUT = 4

    def __init__(self, answers: list) -> None:
        self.answers = [(n, d) if isinstance(n, int) and isinstance(d, str) else (-1, "") for n, d in answers]
        self.wanted = {entry for entry in self.answers if entry[0] >= 0}
        self.copies: list[tuple[int, torch.Tensor, torch.Tensor]] = []
        """(the output's index in ``answers``, the copy, the copy): ``handed.nearest``'s entries."""
        self.seen: set[int] = set()
        self.kept: dict[int, torch.Tensor] = {}

    SNAPSHOT_FACTOR = 4
    """A storage larger than this many times the largest output is not copied (a judge's slot arena, a
    large cache: never an output's view), nor are more than twice as many bytes in all: the hollow
    forward's extra memory is a small multiple of the outputs'."""

    def before(self, kept: list[torch.Tensor]) -> None:
        """Copy the storages of ``kept`` (the tensors alive when forward starts) that could hold an
        output: what a view of one held then is told from what forward put there, whatever view of it
        forward hands a launch (a slice of a workspace, a flat buffer viewed in the output's shape).
        Smallest first, within ``SNAPSHOT_FACTOR``; one not copied is no exemption: it holds an earlier
        call's answer, for other inputs (the hollow forward's are its own), unless forward wrote this one."""
        sizes = [n * _itemsize(d) for n, d in self.wanted]
        if not sizes:
            return
        largest, left = max(sizes), 2 * self.SNAPSHOT_FACTOR * sum(sizes)
        storages: dict[int, torch.UntypedStorage] = {}
        for t in kept:
            address = storage_address(t)
            if address is not None and t.layout is torch.strided:
                storages.setdefault(address, t.untyped_storage())
        for address, storage in sorted(storages.items(), key=lambda item: item[1].nbytes()):
            size = storage.nbytes()
            if size < min(sizes) or size > self.SNAPSHOT_FACTOR * largest or size > left:
                continue
            self.kept[address], left = storage.clone(), left - size

    def dtypes(self) -> list[tuple[int, torch.dtype]]:
        """(numel, dtype) of each output tensor."""
        named = [(numel, getattr(torch, name.removeprefix("torch."), None)) for numel, name in self.wanted]
        return [(numel, dtype) for numel, dtype in named if isinstance(dtype, torch.dtype)]

    def _wanted(self, t: torch.Tensor) -> list[torch.dtype]:
        """The dtypes of the outputs of ``t``'s size that it may hold: its own, or any other numeric one
        where it is numeric (its values cast: red team 19 #1, glue's answer made in float64)."""
        if t.layout is not torch.strided:
            return []
        same = [d for n, d in self.dtypes() if n == t.numel() and (d == t.dtype or (numeric(d) and numeric(t.dtype)))]
        return same

    def see(self, t: torch.Tensor) -> None:
        address = t.untyped_storage().data_ptr()
        dtypes = self._wanted(t)
        if address in self.seen or not dtypes or not t.numel():
            return
        self.seen.add(address)
        start = self.kept.get(address)
        if start is not None and _unchanged(t, start):
            return  # a tensor kept from an earlier call that forward left as it was: not this forward's work
        flat = t.detach().reshape(-1)
        if one_value(flat):
            return
        sample = flat[answer_sample(flat.numel()).to(flat.device)]  # what the judge compares, not a whole copy
        for dtype in dtypes:
            copy = sample.to("cpu", dtype, copy=True)
            outputs = [i for i, entry in enumerate(self.answers) if entry == (t.numel(), str(dtype))]
            self.copies += [(i, copy, copy) for i in outputs]


class LaunchReach:
    """How far each own launch's lanes reached past the tensors it was handed (``races.reach``, under the
    interpreter), around another watch of the launches (``inner``: ``FirstHanded.see``)."""

    def __init__(self, inner: Callable[[tuple, dict], Callable | None]) -> None:
        self.inner = inner
        self.spans: dict[tuple[int, int], float] = {}
        """(first byte's address, past the last) of each tensor handed to a launch -> the largest reach."""

    def see(self, args: tuple, kwargs: dict) -> Callable[[list], None]:
        after = self.inner(args, kwargs)
        with _disable_current_modes():
            tensors = [span for _, t in launch_pointers([*enumerate(args), *kwargs.items()]) if (span := _span(t))]

        def reached(grids: list = ()) -> None:
            try:
                if callable(after):
                    after(grids)
            finally:
                for (start, end, _), ratio in zip(tensors, races.reach(grids, tensors), strict=True):
                    if ratio > self.spans.get((start, end), 0.0):
                        self.spans[(start, end)] = ratio

        return reached

    def report(self, given: list, returned: list) -> list[list]:
        """``Output.reach``: ``[role, index, reach]`` for each tensor reached past, by its role: forward's
        input (``"input"``, its index among the input tensors), output (``"output"``) or neither
        (``"other"``, -1), the largest for each."""
        roles: dict[tuple[int, int], tuple[str, int]] = {}
        with _disable_current_modes():
            for role, leaves in (("output", returned), ("input", given)):
                for i, t in enumerate(leaves):
                    span = _span(t) if isinstance(t, torch.Tensor) else None
                    if span is not None:
                        roles[span[:2]] = (role, i)
        found: dict[tuple[str, int], float] = {}
        for span, ratio in self.spans.items():
            key = roles.get(span, ("other", -1))
            found[key] = max(found.get(key, 0.0), ratio)
        return [[role, index, ratio] for (role, index), ratio in found.items() if ratio > 0]


def _span(t: torch.Tensor) -> tuple[int, int, int] | None:
    """(first byte's address, past the last, element size) of a tensor in host memory, else None."""
    span = extent(t) if t.device.type == "cpu" else None
    start = real_address(t) if span is not None else None
    return (start + span[0], start + span[1], t.element_size()) if start else None


def real_address(t: torch.Tensor) -> int | None:
    """Where ``t``'s storage is in the runner's memory (the interpreter's address, not the one a
    ``HostTensors`` shows forward), or None for a tensor without one of its own."""
    try:
        return placement.storage_address(t.untyped_storage())
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def storage_address(t: torch.Tensor) -> int | None:
    """Where ``t``'s storage is, or None for a tensor without one of its own (sparse, nested)."""
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _itemsize(dtype: str) -> int:
    return getattr(torch, dtype.removeprefix("torch."), torch.uint8).itemsize


def _unchanged(t: torch.Tensor, storage: torch.UntypedStorage) -> bool:
    """Whether ``t`` holds what the same view of ``storage`` (its storage's copy when forward started)
    holds."""
    try:
        then = torch.empty(0, dtype=t.dtype, device=storage.device).set_(
            storage, t.storage_offset(), t.shape, t.stride()
        )
        return torch.equal(then, t.detach())
    except RuntimeError:  # the view reaches past what the storage held then (it grew): not what it was
        return False


def poison(t: torch.Tensor, other: bool = False) -> None:
    """Fill a tensor with a value no correct output holds by chance: NaN, True or the largest integer;
    ``other``: +inf, False or the smallest integer (an answer may be one of the first everywhere, a
    boolean reduction's all True, but not both)."""
    with torch.no_grad():
        if t.dtype.is_floating_point or t.dtype.is_complex:
            t.fill_(float("inf") if other else float("nan"))
        elif t.dtype is torch.bool:
            t.fill_(not other)
        else:
            info = torch.iinfo(t.dtype)
            t.fill_(info.min if other else info.max)


def _signature_error(fn, args: list, kwargs: dict, what: str) -> str | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError as exc:
        return (
            f"{what}{signature} does not accept the problem's arguments ({len(args)} positional"
            + (f", keywords {sorted(kwargs)}" if kwargs else "")
            + f"): {exc}"
        )
    return None


def exercise_guards(witness: bool) -> None:
    """The guards' first use imports lazy modules that rebind torch attributes; the zygote does it
    once (on the CPU: no CUDA), so that no runner pays for it. The op witness's profiler only where
    ``witness``: on a CUDA build with a GPU, starting it initialises CUDA, after which no forked
    runner could make a CUDA context (``warm_up`` starts it there instead, after the context)."""
    witnessed = OpWitness() if witness else contextlib.nullcontext()
    with witnessed, LaunchMonitor("", OpRecorder()) as monitor, monitor.recorder:
        torch.ones(1).add(1)
    count_thread_starts()
    count_profiler_switches()


def interpreter_tampering(monitor: LaunchMonitor) -> list[str]:
    """What forward replaced of Triton's interpreter or NumPy, seen at its grids (guards.LaunchMonitor;
    a monitor the candidate replaced has no such record: its word)."""
    tampered = getattr(monitor, "tampered", None)
    if not isinstance(tampered, list) or not tampered:
        return []
    return [f"replaced in Triton's interpreter: {clip(', '.join(map(str, tampered)), 1000)}"]


def warm_up(device: torch.device, started: dict[str, float]) -> None:
    """What the first call would otherwise pay for on a GPU: the CUDA context and Triton's driver.
    Records in ``started`` when the context was made (``context``) and when the rest was (``warm``)."""
    if device.type == "cuda":
        torch.cuda.set_device(device.index or 0)
        torch.cuda.device_count()  # caches torch.cuda._cached_device_count before the tampering snapshot
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize(device)
        started["context"] = time.monotonic()
        from triton.runtime import driver

        driver.active.get_current_device()
        with OpWitness(), LaunchMonitor("", OpRecorder()) as monitor, monitor.recorder:
            torch.ones(1, device=device).add(1)
        torch.cuda.synchronize(device)
    started["warm"] = time.monotonic()


def serve(
    sock: socket.socket, zygote: int, device_name: str, directory: str, shares_judge_user: bool,
    tools: socket.socket | None = None,
) -> None:  # fmt: skip
    """The runner's life after the zygote forked and hardened it (never returns). ``directory`` is
    the only one it may write in (its job's, made and removed by the judge); ``tools``: on a GPU, the
    socket of its compiler helper, which runs Triton's assembler for it (compiler_helper.py)."""
    started = {"serve": time.monotonic()}
    lifetime = [started["serve"] + 600.0]  # until a job sets its own
    device = torch.device(device_name)
    try:
        warm_up(device, started)
        if tools is not None:
            compiler_helper.route_triton(compiler_helper.Tools(tools))
        # Capabilities and Landlock domains are per thread: both after the CUDA context is made (device
        # files open, Triton's driver built in the runners' shared cache) and before the runner starts
        # a Python thread, so that no thread that runs Python keeps a capability or writes elsewhere
        drop_capabilities()
        landlock.confine_runner(directory, device_name, shares_judge_user)
        if device.type == "cpu":  # a GPU runner's cores are left to the scheduler (its launches' latency)
            confine_cores()
        if seccomp.supported():  # signals and process access only to itself and its own group, and no
            # new process, on a GPU too: its helper runs Triton's assembler (red team 4 #7)
            seccomp.confine(os.getpid(), processes=False)
        watchdog(zygote, lifetime)
        prctl(PR_SET_DUMPABLE, 0)  # a sibling runner of the same user may not trace or read this one
        refuse_audit_hooks()  # no hook of the candidate's runs where Python raises an event (a kernel's frames)
        started["hardened"] = time.monotonic()
        p.send(sock, p.Hello(pid=os.getpid(), started=started))
        Runner(sock, device, lifetime).serve()
    except (p.PeerGone, p.ProtocolError, p.Deadline):
        pass
    except BaseException:  # the runner's own failure (or the candidate's doing): say it where the judge reads
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the candidate may have closed it
                stream.flush()
        os._exit(0)
