"""The sandbox side of an evaluation: ``python -m tritongym.evaluate.harness``.

A warm process the caller can kill at any time. The first stdin line initialises it (device,
limits, the result channel's file descriptor); it imports torch and triton, creates the CUDA
context, and says ``ready``. Then each stdin line is one job: it reports progress and the result as
JSON lines on the channel, never lets an exception escape as a traceback, and checks whether the
candidate left the process tainted (see taint.py); a tainted process exits after its result.

Order matters within a job: every reference output (native dtype and float64) is computed *before*
the candidate is imported, so candidate code cannot touch it, and the seeds are dropped before the
import.

Imports stay light: the standard library, torch, triton, and tritongym's stdlib-only modules.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import importlib.util
import inspect
import json
import os
import platform
import resource
import sys
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tritongym.evaluate.result import Verdict


class Failure(Exception):
    """Ends the evaluation with a verdict (raised by the stages below, caught in ``main``)."""

    def __init__(self, verdict: Verdict, feedback: str, detail: str = ""):
        super().__init__(feedback)
        self.verdict, self.feedback, self.detail = verdict, feedback, detail


class Channel:
    """JSON lines to the parent on an inherited pipe; only the original process may write. Each
    message carries the current job's nonce: the parent ignores lines without it (forged by a
    candidate, or left over from an earlier job)."""

    def __init__(self, fd: int):
        self._fd, self._pid = fd, os.getpid()
        self.nonce = ""

    def send(self, message: dict[str, Any]) -> None:
        if os.getpid() != self._pid:  # a fork of the candidate's must not speak for the harness
            os._exit(0)
        data = (json.dumps(message | {"nonce": self.nonce}) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data) :]

    def stage(self, name: str) -> None:
        self.send({"stage": name})


class _Timer:
    def __init__(self, channel: Channel, name: str, stages: dict[str, float]):
        self.channel, self.name, self.stages = channel, name, stages

    def __enter__(self):
        self.channel.stage(self.name)
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.stages[self.name] = round(time.perf_counter() - self.start, 4)


def _limit_process(init: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    size = init["file_size_limit"]
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def _limit_job(job: dict, device: str) -> None:
    """Per-job soft address-space limit on the CPU (CUDA reserves huge virtual ranges, so on a GPU
    the parent's RSS watchdog is the only limit; it is the enforcing one everywhere)."""
    if device == "cpu":
        limit = job["memory_limit_mb"] << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))


# --- locating the candidate's lines in errors -------------------------------------------------


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def candidate_location(exc: BaseException, path: str) -> str:
    """``line N: <code>`` of the innermost frame in the candidate's file, over the cause chain."""
    for error in _exception_chain(exc):
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
        if frames:
            frame = frames[-1]
            return f"line {frame.lineno}: {(frame.line or '').strip()}"
    return ""


def _detail(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))[-8000:]


def _short(exc: BaseException, limit: int = 1500) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def _is_triton_error(exc: BaseException) -> bool:
    return any(type(e).__module__.split(".")[0] == "triton" for e in _exception_chain(exc))


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"


def classify_failure(exc: BaseException, path: str, what: str) -> Failure:
    """Turn an exception raised by candidate code into a verdict with actionable feedback."""
    where = candidate_location(exc, path)
    at = f" ({where})" if where else ""
    if _is_oom(exc):
        return Failure(Verdict.OUT_OF_MEMORY, f"Out of memory {what}: {_short(exc, 300)}{at}", _detail(exc))
    if _is_triton_error(exc):
        cause = next(e for e in _exception_chain(exc) if type(e).__module__.split(".")[0] == "triton")
        return Failure(
            Verdict.COMPILE_ERROR,
            f"A Triton kernel failed to compile or launch {what}{at}: {_short(cause)}",
            _detail(exc),
        )
    return Failure(Verdict.RUNTIME_ERROR, f"{_short(exc)} {what}{at}", _detail(exc))


# --- the reference ------------------------------------------------------------------------------


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def split_init_inputs(value: Any) -> tuple[list, dict]:
    """KernelBook's ``[args, kwargs]`` form, or KernelBench's plain list of positional arguments."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and isinstance(value[0], (list, tuple))
        and isinstance(value[1], dict)
    ):
        return list(value[0]), dict(value[1])
    return list(value), {}


def _map_tensors(value: Any, fn) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value


def _to_double(t):
    return t.double() if t.is_floating_point() else t


def _detach(value: Any) -> Any:
    return _map_tensors(value, lambda t: t.detach())


class Reference:
    """The reference model, init inputs and, per trial, inputs with native and float64 outputs."""

    def __init__(self, job: dict, device):
        import torch

        path = Path(job["workdir"]) / "reference.py"
        path.write_text(job["problem_source"], encoding="utf-8")
        self.entry_point = job["entry_point"]
        seeds = job.pop("seeds")
        try:
            module = _import_file(path, "reference")
            cls = getattr(module, self.entry_point, None)
            if cls is None:
                raise LookupError(f"the problem defines no class {self.entry_point!r}")
            torch.manual_seed(seeds[0])
            with torch.device(device):
                self.init_args, self.init_kwargs = split_init_inputs(module.get_init_inputs())
                self.model = cls(*self.init_args, **self.init_kwargs).to(device).eval()
            self.float64_note = ""
            model64 = None
            if job["tolerance"] == "float64":
                model64 = copy.deepcopy(self.model).double()
            self.trials = []
            with torch.no_grad():
                for seed in seeds[1:]:
                    torch.manual_seed(seed)
                    with torch.device(device):
                        inputs = list(module.get_inputs())
                    inputs = _map_tensors(inputs, lambda t: t.to(device))
                    out = _detach(self.model(*_map_tensors(inputs, torch.clone)))
                    out64 = None
                    if model64 is not None:
                        try:
                            out64 = _detach(model64(*_map_tensors(inputs, _to_double)))
                        except Exception as exc:  # some ops have no float64 kernel: fall back
                            model64 = None
                            self.float64_note = f"float64 reference unavailable ({_short(exc, 200)})"
                    self.trials.append((inputs, out, out64))
            if model64 is None and job["tolerance"] == "float64":
                self.trials = [(i, o, None) for i, o, _ in self.trials]
        except Exception as exc:
            raise Failure(
                Verdict.INFRASTRUCTURE_ERROR,
                f"The reference problem itself failed: {_short(exc)}",
                _detail(exc),
            ) from exc


# --- the candidate ------------------------------------------------------------------------------


def load_candidate(path: Path, class_name: str, static_checks: bool = True):
    source = path.read_text(encoding="utf-8")
    try:
        compile(source, str(path), "exec")
    except SyntaxError as exc:
        code = (exc.text or "").rstrip()
        raise Failure(
            Verdict.SYNTAX_ERROR,
            f"SyntaxError at line {exc.lineno}: {exc.msg}" + (f"\n    {code}" if code else ""),
        ) from None
    except ValueError as exc:  # e.g. null bytes
        raise Failure(Verdict.INVALID_SOURCE, f"The source cannot be compiled: {exc}") from None
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
    try:
        module = _import_file(path, "candidate")
    except BaseException as exc:  # SystemExit and KeyboardInterrupt raised by candidate code too
        where = candidate_location(exc, str(path))
        raise Failure(
            Verdict.IMPORT_ERROR,
            f"Importing the solution failed: {_short(exc)}" + (f" ({where})" if where else ""),
            _detail(exc),
        ) from None
    cls = getattr(module, class_name, None)
    if cls is None:
        classes = [n for n, v in vars(module).items() if inspect.isclass(v) and v.__module__ == "candidate"]
        found = f" (classes defined: {', '.join(classes)})" if classes else " (it defines no class)"
        raise Failure(Verdict.INTERFACE_ERROR, f"The solution defines no class `{class_name}`{found}.")
    import torch

    if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
        raise Failure(Verdict.INTERFACE_ERROR, f"`{class_name}` must be a subclass of torch.nn.Module.")
    return cls


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


def build_candidate(cls, reference: Reference, path: Path, device):
    import torch

    class_name = cls.__name__
    error = _signature_error(cls.__init__, reference.init_args, reference.init_kwargs, f"{class_name}.__init__")
    if error:
        raise Failure(Verdict.INTERFACE_ERROR, error)
    sample_inputs = reference.trials[0][0]
    error = _signature_error(cls.forward, sample_inputs, {}, f"{class_name}.forward")
    if error:
        raise Failure(Verdict.INTERFACE_ERROR, error)
    try:
        with torch.device(device):
            model = cls(*reference.init_args, **reference.init_kwargs)
        model = model.to(device).eval()
    except BaseException as exc:
        raise classify_failure(exc, str(path), f"while constructing {class_name}") from None
    copy_matching_state(reference.model, model)
    return model


def copy_matching_state(source, target) -> None:
    """Copy the reference's parameters and buffers into the candidate where name and shape match."""
    import torch

    target_state = target.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, value in source.state_dict().items():
            slot = target_state.get(name)
            if isinstance(slot, torch.Tensor) and slot.shape == value.shape:
                slot.copy_(value.to(slot.dtype))


def _inputs_changed(before: list, after: list) -> str | None:
    import torch

    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        if not isinstance(b, torch.Tensor):
            continue
        same = a.shape == b.shape and bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
        if not same:
            return f"forward modified its input argument {i} in place; the reference leaves inputs unchanged"
    return None


def _unwritten(got: Any, expected: Any) -> str:
    """'k of n elements of output[i]' for the first output still holding the poison, or ''."""
    from tritongym.evaluate.guards import tensor_leaves, unwritten_elements

    got_leaves, expected_leaves = tensor_leaves(got), tensor_leaves(expected)
    if len(got_leaves) != len(expected_leaves):
        return ""
    for i, (g, e) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        count = unwritten_elements(g, e) if g.device.type == "cuda" else 0
        if count:
            name = "the output" if len(got_leaves) == 1 else f"output[{i}]"
            return f"{count} of {g.numel()} elements of {name}"
    return ""


def _synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_trials(
    model,
    reference: Reference,
    path: Path,
    device,
    tolerance,
    channel: Channel,
    stages: dict,
    baseline,
    compute_ops: collections.Counter,
) -> dict:
    """Every trial on fresh inputs, each forward watched by the runtime guards before its output is
    compared (so a tampered comparison never runs)."""
    import torch

    from tritongym.evaluate.compare import compare_outputs
    from tritongym.evaluate.guards import LaunchMonitor, OpRecorder, aliasing, poison_free_memory, tensor_leaves

    worst = None
    total = len(reference.trials)
    for n, (inputs, expected, expected64) in enumerate(reference.trials, start=1):
        channel.stage(f"trial {n}")
        given = _map_tensors(inputs, torch.clone)
        if device.type == "cuda":
            poison_free_memory(device, [t.nbytes for t in tensor_leaves([expected, given])])
        what = f"in forward (trial {n} of {total})"
        recorder = OpRecorder()
        started = time.perf_counter()
        try:
            with gpu_lock(exclusive=False), LaunchMonitor(str(path), recorder) as monitor, torch.no_grad(), recorder:
                got = model(*given)
                _synchronize(device)
        except BaseException as exc:
            raise classify_failure(exc, str(path), what) from None
        if n == 1:  # includes Triton's JIT compilation of every kernel the forward launches
            stages["first_trial"] = round(time.perf_counter() - started, 4)
        compute_ops.update(recorder.compute)
        tampered = baseline.tampering()
        if tampered:
            raise Failure(
                Verdict.HACK_TAMPERING, f"Trial {n}: the solution tampered with the judge: {'; '.join(tampered)}."
            )
        stray = baseline.stray_workers()
        if stray:
            raise Failure(Verdict.HACK_THREADS, f"Trial {n}: {'; '.join(stray)} after forward returned.")
        if monitor.launches == 0:
            raise Failure(
                Verdict.HACK_NO_TRITON,
                f"Trial {n}: forward launched none of the solution's own @triton.jit kernels; the work must "
                "be done by Triton kernels defined in the solution.",
            )
        off_stream = monitor.off_stream + sum(recorder.off_stream.values())
        if off_stream:
            ops = ", ".join(sorted(recorder.off_stream)) or "Triton kernels"
            raise Failure(
                Verdict.HACK_SIDE_STREAM,
                f"Trial {n}: forward issued GPU work ({ops}) on another CUDA stream than the one it was called on; "
                "that work is outside the timed window. Launch everything on the current stream.",
            )
        changed = _inputs_changed(inputs, given)
        if changed:
            raise Failure(Verdict.HACK_INPUT_MUTATION, f"Trial {n}: {changed}.")
        owner = aliasing(got, given, model)
        if owner:
            raise Failure(
                Verdict.HACK_OUTPUT_ALIAS,
                f"Trial {n}: an output shares memory with {owner}; return freshly allocated outputs.",
            )
        comparison = compare_outputs(got, expected, expected64, tolerance)
        if not comparison.ok and device.type == "cuda":
            unwritten = _unwritten(got, expected)
            if unwritten:
                raise Failure(
                    Verdict.UNINITIALIZED_OUTPUT,
                    f"Trial {n}: {unwritten} were never written (they still hold the NaN/0xFF poison tritongym fills "
                    "free GPU memory with). Write every element of every output.",
                )
        if not comparison.ok:
            return {
                "verdict": comparison.verdict,
                "feedback": f"Trial {n} of {total}: {comparison.message}",
                "trials_passed": n - 1,
                "errors": comparison.stats,
            }
        if comparison.stats and (worst is None or comparison.stats.max_abs_error > worst.max_abs_error):
            worst = comparison.stats
    return {
        "verdict": Verdict.OK,
        "feedback": f"Correct on all {total} trials.",
        "trials_passed": total,
        "errors": worst,
    }


def guard_findings(
    model, reference: Reference, path: Path, device, job: dict, compute_ops: collections.Counter
) -> list[dict]:
    """Checks on a correct solution: does it route around failed Triton launches, and how much
    PyTorch compute does its forward run (per the torch_compute policy)."""
    import torch

    from tritongym.evaluate.guards import LaunchMonitor

    given = _map_tensors(reference.trials[0][0], torch.clone)
    try:
        with LaunchMonitor(str(path), block=True), torch.no_grad():
            model(*given)
        _synchronize(device)
    except BaseException:
        pass  # a forward that fails when its kernels fail is what we want
    else:
        raise Failure(
            Verdict.HACK_FALLBACK,
            "forward still returned a result when every launch of the solution's Triton kernels failed: "
            "it routes around Triton (try/except or a fallback path). Remove the fallback.",
        )
    ops = compute_ops
    if not ops or job["torch_compute"] == "allow":
        return []
    listing = ", ".join(f"{name} x{count}" for name, count in ops.most_common(8))
    message = f"PyTorch compute ran inside forward over {len(reference.trials)} trials: {listing}"
    if job["torch_compute"] == "forbid":
        raise Failure(Verdict.HACK_TORCH_COMPUTE, message + "; do this work in Triton kernels.")
    return [{"check": "torch_compute", "message": message}]


# --- speed and coverage (CUDA only) ---------------------------------------------------------------

COPY_BANDWIDTH = 0.0
"""Device-to-device copy bandwidth in bytes/s, measured once at start-up (the roofline check's bound)."""
_GPU_LOCK = -1
"""File descriptor of this GPU's lock (see gpu_lock), opened at start-up; -1 on the CPU."""


def _mix_inputs(input_sets: list, chooser) -> list:
    """New inputs for one timed repetition: each floating-point tensor mixed element by element from
    two of the trial input sets with a fresh random mask; other arguments from the first set."""
    import torch

    first, second = chooser.sample(range(len(input_sets)), 2) if len(input_sets) > 1 else (0, 0)
    mixed = []
    for a, b in zip(input_sets[first], input_sets[second], strict=True):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            mask = torch.rand(a.shape, device=a.device) < 0.5
            mixed.append(torch.where(mask, a, b))
        else:
            mixed.append(_map_tensors(a, torch.clone))
    return mixed


def _baseline_model(reference: Reference, job: dict, device, state) -> Any:
    """The function the candidate is timed against. torch.compile patches torch.nn.Module when it
    first compiles; that change is the judge's, so it is compiled and warmed up alone, between two
    points where the process is checked and then re-baselined."""
    if job["baseline"] == "eager":
        return reference.model
    import torch
    import torch._inductor.config as inductor_config

    tampered = state.tampering()
    if tampered:
        raise Failure(Verdict.HACK_TAMPERING, f"The solution tampered with the judge: {'; '.join(tampered)}.")
    inductor_config.compile_threads = 1  # no pool of compile workers: they would look like the candidate's
    compiled = torch.compile(reference.model)
    with torch.no_grad():
        for _ in range(3):
            compiled(*_map_tensors(reference.trials[0][0], torch.clone))
    _synchronize(device)
    state.accept_judge_changes()
    return compiled


def time_candidate(model, reference: Reference, job: dict, device, state) -> dict:
    """Interleaved timing against the baseline (timing.py), with the candidate's outputs checked
    against the reference's on the same fresh inputs, and the roofline plausibility check."""
    import random

    import torch

    from tritongym.evaluate import timing
    from tritongym.evaluate.compare import LOOSE_TOLERANCE, Tolerance, compare_outputs
    from tritongym.evaluate.guards import tensor_leaves

    loose = Tolerance("fixed", atol=LOOSE_TOLERANCE, rtol=LOOSE_TOLERANCE)
    sets = [inputs for inputs, _, _ in reference.trials]
    chooser = random.SystemRandom()
    baseline = _baseline_model(reference, job, device, state)
    clone = functools.partial(_map_tensors, fn=torch.clone)

    def check(expected, got, call: int) -> None:
        comparison = compare_outputs(got, expected, None, loose)
        if not comparison.ok:
            raise Failure(
                comparison.verdict,
                f"During timing (call {call}, fresh inputs): {comparison.message} The solution was correct on the "
                "trials but not here: its output depends on earlier calls (cached results?) or was not finished on "
                "the timed stream when forward returned.",
            )

    with torch.no_grad():
        for _ in range(3):  # warm-up: torch.compile's compilation, caches, clocks
            args = clone(sets[0])
            baseline(*args), model(*clone(sets[0]))
        _synchronize(device)
        measured = timing.measure(
            baseline,
            model,
            lambda: _mix_inputs(sets, chooser),
            clone,
            check,
            device,
            job["timing_target"],
            job["timing_budget_s"],
        )
    summary = timing.summarise(measured.reference_ms, measured.candidate_ms)
    result = {
        "speedup": round(summary.speedup, 4),
        "timing": {
            "baseline": job["baseline"],
            "reference_ms": summary.reference_ms,
            "reference_ci_ms": list(summary.reference_ci_ms),
            "candidate_ms": summary.candidate_ms,
            "candidate_ci_ms": list(summary.candidate_ci_ms),
            "speedup_ci": [round(x, 4) for x in summary.speedup_ci],
            "spread": round(summary.spread, 4),
            "reps": summary.reps,
            "stopped": measured.stopped,
            "input_sets": len(sets),
            "flush_bytes": measured.flush_bytes,
        },
    }
    bytes_read = sum(t.nbytes for t in tensor_leaves(sets[0]))
    flag = timing.implausible(summary.candidate_ms, bytes_read, COPY_BANDWIDTH)
    if flag:
        result["findings"] = [{"check": "implausible_speedup", "message": flag}]
    return result


def profile_candidate(model, reference: Reference, path: Path, device) -> dict:
    """Coverage and the per-kernel breakdown of one forward; work on another stream is a hack."""
    import torch

    from tritongym.evaluate.profiling import profile_forward

    attribution = profile_forward(model, _map_tensors(reference.trials[0][0], torch.clone), str(path), device)
    if attribution.foreign_streams:
        names = ", ".join(attribution.foreign_streams[:5])
        raise Failure(
            Verdict.HACK_SIDE_STREAM,
            f"The profiled forward ran GPU work on another stream than the one it was called on ({names}); "
            "that work is outside the timed window. Launch everything on the current stream.",
        )
    return {"coverage": attribution.coverage, "kernels": attribution.kernels}


_BASELINE_NAMES = {"eager": "eager PyTorch", "compile": "torch.compile"}


def speed_feedback(result: dict) -> str:
    """The speed and coverage part of the feedback a model reads."""
    parts = []
    timing = result.get("timing")
    if timing:
        low, high = timing["speedup_ci"]
        against = _BASELINE_NAMES[timing["baseline"]]
        parts.append(
            f" Speedup {result['speedup']:.3g}x over {against} (95% CI {low:.3g}-{high:.3g}; "
            f"{timing['candidate_ms'] * 1e3:.1f} us vs {timing['reference_ms'] * 1e3:.1f} us)."
        )
    if result.get("coverage") is not None:
        top = ", ".join(
            f"{k['name'][:40]}{'' if k['own'] else ' (not yours)'} {k['share']:.0%}" for k in result["kernels"][:4]
        )
        parts.append(f" Coverage {result['coverage']:.2f} of GPU time in your Triton kernels ({top}).")
    return "".join(parts)


@contextlib.contextmanager
def gpu_lock(exclusive: bool):
    """This GPU's lock, shared by every sandbox on the machine: a forward of the correctness trials
    holds it shared, timing and profiling hold it exclusively, so nothing else of ours runs on the
    GPU while a candidate is timed. A no-op on the CPU."""
    import fcntl

    if _GPU_LOCK < 0:
        yield
        return
    fcntl.flock(_GPU_LOCK, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(_GPU_LOCK, fcntl.LOCK_UN)


def speed_and_coverage(
    model, reference: Reference, path: Path, job: dict, device, channel: Channel, stages: dict, baseline
) -> dict:
    """Timing and profiling of a correct candidate under this GPU's timing lock; the judge is checked
    for tampering afterwards, since both run the candidate's forward again."""
    result: dict[str, Any] = {}
    with gpu_lock(exclusive=True):
        if job["timing"]:
            with _Timer(channel, "timing", stages):
                result |= time_candidate(model, reference, job, device, baseline)
        if job["profile"]:
            with _Timer(channel, "profiling", stages):
                result |= profile_candidate(model, reference, path, device)
    tampered = baseline.tampering()
    if tampered:
        listing = "; ".join(tampered)
        raise Failure(Verdict.HACK_TAMPERING, f"While being timed the solution tampered with the judge: {listing}.")
    stray = baseline.stray_workers()
    if stray:
        raise Failure(Verdict.HACK_THREADS, f"{'; '.join(stray)} after timing.")
    return result


def describe_device(device) -> str:
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.machine()}, Triton interpreter)"


def versions() -> dict[str, str]:
    import torch
    import triton

    return {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}


def warm_up(device_name: str, lock_dir: str):
    """Import what every evaluation needs and create the CUDA context, once per process; on a GPU
    also measure its copy bandwidth and open its timing lock."""
    global COPY_BANDWIDTH, _GPU_LOCK
    import torch

    import tritongym.evaluate.compare
    from tritongym.evaluate.guards import LaunchMonitor, OpRecorder

    device = torch.device(device_name)
    if device.type == "cuda":
        import tritongym.evaluate.profiling  # noqa: F401
        from tritongym.evaluate import timing

        COPY_BANDWIDTH = timing.copy_bandwidth(device)
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        _GPU_LOCK = os.open(Path(lock_dir) / f"tritongym-gpu-{uuid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    # Exercise the guards once: their first use imports lazy modules that rebind torch attributes,
    # which must happen before the baseline snapshot, not inside a candidate's trial.
    with LaunchMonitor("", OpRecorder()) as monitor, monitor.recorder:
        torch.ones(1, device=device).add(1)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return device


def evaluate(job: dict, channel: Channel, device, stages: dict[str, float], baseline) -> dict:
    from tritongym.evaluate.compare import Tolerance

    tolerance = Tolerance(job["tolerance"], job["error_factor"], job["scale_floor"], job["atol"], job["rtol"])
    result: dict[str, Any] = {"device": describe_device(device), "versions": versions(), "trials": job["trials"]}
    with _Timer(channel, "reference", stages):
        reference = Reference(job, device)
    if reference.float64_note:
        tolerance = Tolerance("fixed", atol=tolerance.atol, rtol=tolerance.rtol)
        result["findings"] = [{"check": "tolerance", "message": reference.float64_note + "; used fixed tolerances"}]
    path = Path(job["candidate_path"])
    with _Timer(channel, "import", stages):
        cls = load_candidate(path, job["solution_class"], job["static_checks"])
    with _Timer(channel, "build", stages):
        model = build_candidate(cls, reference, path, device)
    compute_ops: collections.Counter[str] = collections.Counter()
    with _Timer(channel, "correctness", stages):
        result |= run_trials(model, reference, path, device, tolerance, channel, stages, baseline, compute_ops)
    if result["verdict"] is Verdict.OK:
        with _Timer(channel, "guards", stages):
            found = guard_findings(model, reference, path, device, job, compute_ops)
            result["findings"] = result.get("findings", []) + found
        if device.type == "cuda" and (job["timing"] or job["profile"]):
            measured = speed_and_coverage(model, reference, path, job, device, channel, stages, baseline)
            result["findings"] += measured.pop("findings", [])
            result |= measured
            result["feedback"] += speed_feedback(result)
        elif job["timing"]:
            result["feedback"] += " Timing unavailable on the CPU (Triton interpreter): no speedup was measured."
    return result


def _enter_workdir(job: dict) -> None:
    workdir = job["workdir"]
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    tempfile.tempdir = None


def run_job(job: dict, channel: Channel, device, baseline) -> dict:
    """One evaluation, as the result message's payload (never raises)."""
    stages: dict[str, float] = {}
    start = time.perf_counter()
    try:
        _enter_workdir(job)
        result = evaluate(job, channel, device, stages, baseline)
    except Failure as failure:
        result = {"verdict": failure.verdict, "feedback": failure.feedback, "detail": failure.detail}
    except BaseException as exc:  # a bug here or candidate code escaping: never a bare traceback
        failure = classify_failure(exc, job["candidate_path"], "in the evaluation")
        result = {"verdict": failure.verdict, "feedback": failure.feedback, "detail": failure.detail}
    if result.get("errors") is not None and not isinstance(result["errors"], dict):
        result["errors"] = asdict(result["errors"])
    stages["total"] = round(time.perf_counter() - start, 4)
    result["stage_seconds"] = stages
    return result


def _end_output(marker: str) -> None:
    """Flush the candidate's output and mark where this job's output ends on both streams."""
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        with contextlib.suppress(Exception):
            stream.flush()
        os.write(fd, f"\n{marker}\n".encode())


def main() -> None:
    from tritongym.evaluate.taint import ProcessState

    init = json.loads(sys.stdin.readline())
    channel = Channel(init["channel_fd"])
    _limit_process(init)
    device = warm_up(init["device"], init["lock_dir"])
    ready = {"device": describe_device(device), "versions": versions()}
    if device.type == "cpu":
        from tritongym.evaluate.selftest import interpreter_problem

        ready["unusable"] = interpreter_problem()
    channel.send({"ready": ready})
    baseline = ProcessState()
    for line in sys.stdin:
        job = json.loads(line)
        channel.nonce = job.pop("nonce")
        _limit_job(job, init["device"])
        result = run_job(job, channel, device, baseline)
        os.chdir(init["home"])
        baseline.forget_candidate_modules(job["workdir"])
        taint = baseline.taint()
        _end_output(job["output_marker"])
        channel.send({"result": result, "taint": taint})
        if taint:
            break
    os._exit(0)  # skip interpreter teardown (atexit hooks the candidate may have registered)


if __name__ == "__main__":
    main()
