"""Verdicts and the result of evaluating one candidate (JSON-serialisable, stdlib only)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """One verdict per evaluation; ``ok`` is the only passing one."""

    OK = "ok"
    INVALID_SOURCE = "invalid_source"
    """Empty, binary, oversized or non-UTF-8 candidate text: nothing was run."""
    SYNTAX_ERROR = "syntax_error"
    IMPORT_ERROR = "import_error"
    """The module raised while being imported (missing module, error at top level)."""
    INTERFACE_ERROR = "interface_error"
    """No solution class, not an nn.Module, or a constructor/forward signature that does not fit."""
    COMPILE_ERROR = "compile_error"
    """A Triton kernel failed to compile or launch (the interpreter's errors count too)."""
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    """The sandbox process died (segfault, ``os._exit``, abort) or broke its protocol."""
    OUT_OF_MEMORY = "out_of_memory"
    WRONG_SHAPE = "wrong_shape"
    """Output structure, shape or device differs from the reference."""
    WRONG_DTYPE = "wrong_dtype"
    MISMATCH = "mismatch"
    PRECISION = "precision"
    """Close to the reference, but far less accurate than PyTorch at the problem's dtype."""
    HACK_INPUT_MUTATION = "hack_input_mutation"
    """forward changed one of its inputs in place."""
    HACK_OUTPUT_ALIAS = "hack_output_alias"
    """An output shares memory with an input, a parameter or a buffer."""
    HACK_NO_TRITON = "hack_no_triton"
    """No kernel of the candidate's own @triton.jit functions ran in a forward (or its text defines
    none, and it was not run)."""
    HACK_FALLBACK = "hack_fallback"
    """forward still returned when every launch of the candidate's kernels failed: it routes around Triton."""
    HACK_TORCH_COMPUTE = "hack_torch_compute"
    """PyTorch compute ops ran inside forward (only under the ``forbid`` policy)."""
    HACK_TAMPERING = "hack_tampering"
    """The candidate replaced functions or settings of torch, triton, builtins or the judge."""
    HACK_THREADS = "hack_threads"
    """The candidate left threads or processes running after forward."""
    HACK_SIDE_STREAM = "hack_side_stream"
    """GPU work of forward ran on a stream other than the one it was called on (outside the timed window)."""
    UNINITIALIZED_OUTPUT = "uninitialized_output"
    """Part of an output was never written: it still holds the poison the free GPU memory was filled with."""
    HACK_FORBIDDEN_API = "hack_forbidden_api"
    """The source uses a construct a kernel has no use for (gc, ctypes, frames, os.fork, patching ...)."""
    INFRASTRUCTURE_ERROR = "infrastructure_error"
    """Not the candidate's fault (broken problem, sandbox could not start); never a reward."""

    @property
    def compiled(self) -> bool:
        """Whether a verdict implies the candidate loaded and its kernels ran."""
        return self not in _NOT_COMPILED

    @property
    def category(self) -> Category:
        """What kind of outcome this is, for rewards and reports (see ``Category``)."""
        if self is Verdict.OK:
            return Category.OK
        if self is Verdict.INFRASTRUCTURE_ERROR:
            return Category.INFRASTRUCTURE
        if self.value.startswith("hack_") or self is Verdict.UNINITIALIZED_OUTPUT:
            return Category.HACK
        if self in _FAILED:
            return Category.FAILED
        return Category.INCORRECT


class Category(StrEnum):
    """The five kinds of verdict. Every verdict is in exactly one."""

    OK = "ok"
    """Correct on every trial."""
    FAILED = "failed"
    """Produced no output to judge: the source was refused as text, or did not parse, import, fit the
    interface or compile, or the run timed out or crashed."""
    INCORRECT = "incorrect"
    """Ran but did not produce the right output: it raised (runtime_error, out_of_memory) or returned
    a wrong structure, dtype or values (wrong_shape, wrong_dtype, mismatch, precision)."""
    HACK = "hack"
    """Cheated, or tried to: every hack_* verdict and uninitialized_output (an output left partly
    unwritten, passing only where stale memory holds the answer). Rewards pay their hack penalty."""
    INFRASTRUCTURE = "infrastructure"
    """Not the candidate's doing (infrastructure_error): no reward at all; drop the sample."""


_FAILED = {
    Verdict.INVALID_SOURCE,
    Verdict.SYNTAX_ERROR,
    Verdict.IMPORT_ERROR,
    Verdict.INTERFACE_ERROR,
    Verdict.COMPILE_ERROR,
    Verdict.TIMEOUT,
    Verdict.CRASH,
}


_NOT_COMPILED = {
    Verdict.INVALID_SOURCE,
    Verdict.SYNTAX_ERROR,
    Verdict.IMPORT_ERROR,
    Verdict.INTERFACE_ERROR,
    Verdict.COMPILE_ERROR,
    Verdict.INFRASTRUCTURE_ERROR,
    Verdict.HACK_FORBIDDEN_API,
}


@dataclass
class Finding:
    """Something a check noticed, with the name of the check."""

    check: str
    message: str


@dataclass
class ErrorStats:
    """Numerical error of the worst output tensor of the worst trial."""

    output: str
    """Which output: ``output`` or ``output[1]``."""
    max_abs_error: float
    max_rel_error: float
    allowed_abs_error: float
    worst_index: list[int]
    got: float
    expected: float
    mismatched: int
    """Elements over the allowed error."""
    numel: int
    reference_error: float | None = None
    """PyTorch's own max error at the problem's dtype against float64 (float64 policy only), over the
    elements where it is finite."""
    overflowed: int = 0
    """Elements where PyTorch at the problem's dtype gives inf/NaN but float64 is finite (it
    overflowed): there PyTorch's inf/NaN or the float64 value within tolerance is accepted."""


@dataclass
class TimingStats:
    """Interleaved timing of the reference and the candidate on the judge's GPU clock (milliseconds)."""

    baseline: str
    """What the candidate was timed against: ``eager`` PyTorch or ``compile`` (torch.compile)."""
    reference_ms: float
    """Median time of one reference forward."""
    reference_ci_ms: list[float]
    """95% confidence interval of that median (order statistics)."""
    candidate_ms: float
    candidate_ci_ms: list[float]
    speedup_ci: list[float]
    """95% confidence interval of the speedup (median of the paired ratios reference / candidate)."""
    spread: float
    """Interquartile range of the candidate's times over their median."""
    reps: int
    """Timed repetitions (each a batch of calls of each side on fresh inputs)."""
    stopped: str
    """Why timing stopped: ``target`` (confidence interval narrow enough), ``budget`` (with at least
    ``timing.MIN_VALID_REPS`` valid repetitions and an interval within ``timing.TRUSTED_PRECISION``)
    or ``max_reps``; or, with no speedup reported, ``ceiling`` (too few valid repetitions before the
    hard ceiling) or ``contended`` (the GPU had company in most repetitions)."""
    input_sets: int
    """Fresh input sets timed (each side ran forward once on each)."""
    flush_bytes: int
    """Bytes written after the inputs of every timed batch were copied in, to evict the L2 cache."""
    hand_off_us: float | None = 0.0
    """Median cost per batch of handing it to the runner's CUDA context and back, measured with the judge's
    twin process in every repetition (two events of the judge's around the twin's part of its empty
    bracket, which is subtracted from the candidate's time). None only in results of earlier versions,
    which measured it between brackets and could not where the reference's output is not contiguous."""
    runner_hand_off_us: float = 0.0
    """Median cost per batch of the same hand-off to the runner's own context and back, measured with an
    empty batch of the runner's in every repetition: what is subtracted for the hand-off (at most the twin's
    plus a slack); 0 in results of earlier versions."""
    clean_hand_off_us: float = 0.0
    """The same cost measured when the judge started, before any candidate ran: a much larger
    ``hand_off_us`` means something else shared the GPU while this candidate was timed."""
    late_brackets: int = 0
    """Timed batches whose calls the host could not queue ahead within the longest hold (their host time
    counted: a host-bound forward)."""
    late_by: dict[str, int] = field(default_factory=dict)
    """``late_brackets`` by side: ``reference``, ``candidate``, ``runner hand-off``."""
    invalid_reps: int = 0
    """Repetitions measured but not used (repeated instead): contended ones, and those where a side's
    net time was not clearly above the noise of what is subtracted from it or the candidate's was below
    the physical floor (timing.rep_problem)."""
    contended_reps: int = 0
    """Of those, repetitions in which one of the judge's fixed workloads (L2 flush, end probe, hand-off)
    took much longer than when the judge started: something else shared the GPU."""
    contended_by: dict[str, int] = field(default_factory=dict)
    """The contended repetitions by the workload that ran slow (``L2 flush``, ``end probe``,
    ``hand-off``): where the company showed."""
    subtracted_us: list[float] = field(default_factory=list)
    """What was subtracted from every reference and every candidate batch (microseconds): the medians of
    the uncontended empty brackets, the candidate's hand-off part the runner's, bounded by the twin's and the
    clean one (timing.subtracted)."""


@dataclass
class KernelShare:
    """One GPU kernel (or memcpy/memset) of the profiled forward."""

    name: str
    launches: int
    time_us: float
    share: float
    """Fraction of the forward's GPU time."""
    own: bool
    """Compiled from one of the candidate's own @triton.jit functions (by launch identity, not name)."""


@dataclass
class EvalResult:
    """The outcome of one evaluation of one candidate on one problem."""

    problem: str
    verdict: Verdict
    feedback: str
    """Short text a model can act on."""
    compiled: bool = False
    correct: bool = False
    trials: int = 0
    trials_passed: int = 0
    errors: ErrorStats | None = None
    findings: list[Finding] = field(default_factory=list)
    speedup: float | None = None
    """Reference time / candidate time (lower median of interleaved pairs); None where not timed (CPU)
    or where timing could not produce a trustworthy number (a ``timing_untrusted`` finding says why)."""
    timing: TimingStats | None = None
    coverage: float | None = None
    """Share of the forward's GPU time spent in the candidate's own Triton kernels; None on the CPU."""
    kernels: list[KernelShare] = field(default_factory=list)
    """Per-kernel breakdown of one profiled forward, largest first."""
    device: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each stage (reference, import, build, correctness, guards, timing, profiling, total)."""
    detail: str = ""
    """Longer diagnostics (the candidate's traceback), for people rather than models."""
    stdout: str = ""
    stderr: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        """Rebuild a result; unknown keys are rejected (the sandbox's messages are untrusted)."""
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown result fields: {sorted(unknown)}")
        data = dict(data)
        data["verdict"] = Verdict(data["verdict"])
        if data.get("errors") is not None:
            data["errors"] = ErrorStats(**data["errors"])
        data["findings"] = [Finding(**f) for f in data.get("findings", [])]
        if data.get("timing") is not None:
            data["timing"] = TimingStats(**data["timing"])
        data["kernels"] = [KernelShare(**k) for k in data.get("kernels", [])]
        return cls(**data)
