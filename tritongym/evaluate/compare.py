"""Compare a candidate's outputs with the reference's: structure, dtype, NaN/Inf, tolerance.

Pure functions of tensors. Two policies:

* ``float64`` (default): the error of the candidate against a float64 run of the reference must be
  at most ``factor`` times PyTorch's own error at the problem's dtype (never less than one rounding
  unit of the output's scale), plus a floor of ``scale_floor`` times the output's RMS. Every term
  scales with the output, so multiplying a problem's outputs by 1e-9 changes no verdict. A candidate
  that fails this but is within 1e-2 of the float64 result, relative to the element and the output's
  RMS, is reported as ``precision`` (e.g. tf32 or bf16 arithmetic for a float32 problem), not
  ``mismatch``.
* ``fixed``: ``|got - ref| <= atol + rtol * |ref|`` against the reference at its own dtype
  (KernelBench's numbers: 1e-4 for fp32, 1e-2 for fp16/bf16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from tritongym.evaluate.judge.tree import leaves
from tritongym.evaluate.result import ErrorStats, Verdict

CHUNK_ELEMENTS = 1 << 24
"""Elements compared at a time: the comparison's float64 temporaries take a few hundred MiB at most,
whatever the output's size, and the float64 reference may live on the host (moved a chunk at a time)."""
LOOSE_TOLERANCE = 1e-2
"""Relative bound of the loose check that separates ``precision`` from ``mismatch`` (float64 policy:
relative to the element plus the output's RMS), and its atol = rtol as a fixed tolerance."""


@dataclass(frozen=True)
class Tolerance:
    policy: str = "float64"
    """'float64' (against a float64 run of the reference) or 'fixed' (KernelBench's atol/rtol)."""
    factor: float = 32.0
    """How many times PyTorch's own error at the problem's dtype a candidate may have (float64)."""
    scale_floor: float = 1e-5
    """Error always allowed, as a fraction of the RMS of the float64 reference output (float64)."""
    atol: float | None = None
    rtol: float | None = None


@dataclass
class Comparison:
    verdict: Verdict
    message: str = ""
    stats: ErrorStats | None = None
    bounds: list[float | None] = field(default_factory=list)
    """Per tensor leaf of the output: the error a timed call's output may have against the reference's
    output at the problem's dtype, as a fraction of that output's largest magnitude (``timed_bound``;
    None where it must match exactly). Filled for an ``ok`` comparison."""

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.OK


def fixed_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """KernelBench's (atol, rtol) for an output dtype."""
    return (1e-2, 1e-2) if dtype in (torch.float16, torch.bfloat16) else (1e-4, 1e-4)


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    return leaves(value, path)


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list, dict)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


MAX_LISTED_KEYS = 8
"""Keys of a dict output named in a structure message (the candidate's dict may hold any number)."""


def _some_keys(keys: set) -> str:
    """A bounded listing of dict keys: the first few in order, each clipped, and how many more."""
    names = sorted(repr(k)[:60] for k in keys)
    more = len(names) - MAX_LISTED_KEYS
    if not names:
        return "none"
    return "[" + ", ".join(names[:MAX_LISTED_KEYS]) + (f", ... {more} more" if more > 0 else "") + "]"


def _structure_error(got: Any, expected: Any, path: str) -> str | None:
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)):
            return f"{path}: expected a {type(expected).__name__} of {len(expected)} values, got {_describe(got)}"
        if len(got) != len(expected):
            return f"{path}: expected {len(expected)} values, got {len(got)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            error = _structure_error(g, e, f"{path}[{i}]")
            if error:
                return error
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{path}: expected a dict with keys {sorted(map(repr, expected))}, got {_describe(got)}"
        if set(got) != set(expected):
            missing, extra = _some_keys(set(expected) - set(got)), _some_keys(set(got) - set(expected))
            return f"{path}: keys differ from the expected ones (missing: {missing}; unexpected: {extra})"
        for key in expected:
            error = _structure_error(got[key], expected[key], f"{path}[{key!r}]")
            if error:
                return error
        return None
    if isinstance(expected, torch.Tensor):
        if type(got) is not torch.Tensor:
            return f"{path}: expected a torch.Tensor, got {_describe(got)}"
        if got.shape != expected.shape:
            return f"{path}: shape {tuple(got.shape)} differs from the expected {tuple(expected.shape)}"
        return None
    if isinstance(got, torch.Tensor) or not isinstance(got, type(expected)):
        return f"{path}: expected a {type(expected).__name__}, got {_describe(got)}"
    return None


def _index(flat_index: int, shape: torch.Size) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return list(reversed(index))


def _fmt_index(index: list[int]) -> str:
    return "(" + ", ".join(map(str, index)) + ")" if index else "()"


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1)


def _spans(numel: int):
    """(start, end) of each chunk of a flattened output."""
    for start in range(0, numel, CHUNK_ELEMENTS):
        yield start, min(start + CHUNK_ELEMENTS, numel)


class _FirstBad:
    """The first element over the chunks where a check fails, and how many fail."""

    def __init__(self) -> None:
        self.index, self.count, self.got, self.expected, self.native = -1, 0, 0.0, 0.0, 0.0

    def update(self, offset: int, bad: torch.Tensor, got, expected, native=None) -> None:
        count = int(bad.sum())
        if count and self.index < 0:
            i = int(bad.nonzero()[0])
            self.index = offset + i
            self.got, self.expected = got[i].item(), expected[i].item()
            self.native = native[i].item() if native is not None else 0.0
        self.count += count


class _Errors:
    """The error statistics of a comparison, accumulated chunk by chunk (what ``ErrorStats`` holds)."""

    def __init__(self) -> None:
        self.max_abs, self.max_rel, self.index, self.got, self.expected, self.allowed = -1.0, 0.0, 0, 0.0, 0.0, 0.0
        self.mismatched = 0

    def update(self, offset: int, got64: torch.Tensor, ref64: torch.Tensor, allowed) -> torch.Tensor:
        err = (got64 - ref64).abs()
        if not err.numel():
            return err
        i = int(err.argmax())
        worst = float(err[i])
        if worst > self.max_abs:
            self.max_abs, self.index = worst, offset + i
            self.got, self.expected = float(got64[i]), float(ref64[i])
            self.allowed = float(allowed[i]) if isinstance(allowed, torch.Tensor) else float(allowed)
        self.max_rel = max(self.max_rel, float((err / ref64.abs().clamp_min(1e-12)).max()))
        self.mismatched += int((err > allowed).sum())
        return err

    def stats(self, path: str, shape: torch.Size, numel: int, reference_error=None, overflowed: int = 0) -> ErrorStats:
        return ErrorStats(
            output=path,
            max_abs_error=max(self.max_abs, 0.0),
            max_rel_error=self.max_rel,
            allowed_abs_error=self.allowed,
            worst_index=_index(self.index, shape) if numel else [],
            got=self.got,
            expected=self.expected,
            mismatched=self.mismatched,
            numel=numel,
            reference_error=reference_error,
            overflowed=overflowed,
        )


def _nonfinite_message(path: str, shape: torch.Size, first: _FirstBad) -> str:
    """Require NaN where the reference has NaN, and the same infinities; finite elsewhere."""
    index = _fmt_index(_index(first.index, shape))
    return (
        f"{path}: got {first.got} at index {index}, expected {first.expected} "
        f"({first.count} element{'s' if first.count > 1 else ''} with NaN/Inf where the reference differs)"
    )


def _nonfinite(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    g_nan, e_nan = torch.isnan(got), torch.isnan(expected)
    g_inf, e_inf = torch.isinf(got), torch.isinf(expected)
    return (g_nan != e_nan) | (g_inf != e_inf) | (e_inf & (got != expected))


def _overflow_message(path: str, shape: torch.Size, dtype: torch.dtype, first: _FirstBad) -> str:
    """Where PyTorch overflowed at the problem's dtype but float64 did not, a non-finite result must
    be PyTorch's own (the same infinity, or NaN where it has NaN); a finite one is judged numerically."""
    return (
        f"{path}: got {first.got} at index {_fmt_index(_index(first.index, shape))}, where the "
        f"float64 result is {first.expected:.6g} and PyTorch at {str(dtype).removeprefix('torch.')} "
        f"overflows to {first.native}; either of those is accepted there, nothing else"
    )


def _overflow_note(count: int, dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    return (
        f"{count} element{'s' if count > 1 else ''} overflowed in PyTorch at {name} (inf/NaN) where float64 is "
        f"finite; there PyTorch's inf/NaN or the float64 value within tolerance is accepted"
    )


def _mismatch_message(stats: ErrorStats, verdict: Verdict, dtype: torch.dtype | None = None) -> str:
    share = 100.0 * stats.mismatched / max(stats.numel, 1)
    text = (
        f"{stats.output}: max abs error {stats.max_abs_error:.3g} at index {_fmt_index(stats.worst_index)} "
        f"(got {stats.got:.6g}, expected {stats.expected:.6g}; allowed {stats.allowed_abs_error:.3g}); "
        f"{stats.mismatched} of {stats.numel} elements ({share:.3g}%) out of tolerance"
    )
    if verdict is Verdict.PRECISION:
        text += (
            f". The result is close but far less accurate than PyTorch's own "
            f"(error {stats.reference_error:.3g}): compute and accumulate at the problem's precision "
            f"(for tl.dot on float32 use input_precision='ieee', not tf32); a long reduction that adds its "
            f"partials one at a time (tl.atomic_add of each element or small block) loses accuracy too: reduce "
            f"within each program first (a large block, or a loop over blocks), so that few partials are added"
        )
    return text + (f" ({_overflow_note(stats.overflowed, dtype)})" if stats.overflowed and dtype else "")


def allowed_error(scale: float, rms: float, reference_error: float, dtype: torch.dtype, tol: Tolerance) -> float:
    """The allowed absolute error under the float64 policy, from the float64 reference's largest
    magnitude ``scale`` and its RMS:

    ``factor * max(reference_error, eps(dtype) * scale) + max(scale_floor * rms, tiny(dtype))``.

    ``reference_error`` is PyTorch's own max error at the problem's dtype. The ``eps`` term is one
    rounding unit where PyTorch happens to be exact; the floor, a fraction of the output's RMS, covers
    elements near zero in an output of ordinary scale; ``tiny`` (the smallest normal number) lets an
    all-zero output tolerate flushed denormals and nothing more.
    """
    finfo = torch.finfo(dtype)
    floor = max(tol.scale_floor * rms, finfo.tiny)
    return tol.factor * max(reference_error, finfo.eps * scale) + floor


def element_bounds(expected: torch.Tensor, expected64: torch.Tensor | None, tol: Tolerance) -> list[torch.Tensor]:
    """[what the elements of ``expected`` (a sample of an output's) are compared with, the error each may
    have], flat on the host, as ``compare_outputs`` judges them alone: under the float64 policy the float64
    reference (PyTorch's own inf or NaN where it overflowed and float64 did not) and the error
    ``allowed_error`` gives from their scale, RMS and PyTorch's error there; under fixed tolerances the
    reference and ``atol + rtol * |reference|``; for an exact dtype the reference and no error. A complex
    output is its real and imaginary parts. What the runner ranks samples by (``handed.nearest``)."""
    e = expected.detach().reshape(-1).cpu()
    e64 = expected64.detach().reshape(-1).cpu() if isinstance(expected64, torch.Tensor) else None
    if e.is_complex():
        e = torch.view_as_real(e).reshape(-1)
        e64 = torch.view_as_real(e64).reshape(-1) if e64 is not None else None
    if not e.is_floating_point():
        return [e.clone(), torch.zeros(e.numel(), dtype=torch.float64)]
    if tol.policy == "fixed" or e64 is None:
        atol, rtol = fixed_tolerances(e.dtype)
        atol = tol.atol if tol.atol is not None else atol
        rtol = tol.rtol if tol.rtol is not None else rtol
        ref = e.double()
        return [ref, atol + rtol * torch.where(torch.isfinite(ref), ref.abs(), 0.0)]
    native, finite = e.double(), torch.isfinite(e64)
    overflow = finite & ~torch.isfinite(native)
    ref64 = torch.where(finite, e64.double(), 0.0)
    scale = float(ref64.abs().max()) if ref64.numel() else 0.0
    rms = float(ref64.square().mean().sqrt()) if ref64.numel() else 0.0
    error = torch.where(finite & ~overflow, native, ref64) - ref64
    reference_error = float(error.abs().max()) if error.numel() else 0.0
    allowed = allowed_error(scale, rms, reference_error, e.dtype, tol)
    reference = torch.where(overflow, native, e64.double())
    return [reference, torch.full_like(reference, allowed)]


def timed_bound(allowed: float, reference_error: float, scale: float) -> float:
    """A timed call's bound (``Comparison.bounds``) from a trial's: the candidate was within
    ``allowed`` of the float64 result and PyTorch within ``reference_error`` of it, so within their
    sum of PyTorch's result, relative to the output's largest magnitude ``scale``. The timed batches
    compare with PyTorch's result alone (no float64 run: speed.check_batch), which allows a few times
    this (``TIMED_SLACK``): arithmetic at a lower precision than the trials' (TF32, bf16 or fp16 for
    a float32 problem) is thousands of times over it."""
    return (allowed + reference_error) / scale if scale > 0 else math.inf


def _compare_float(path: str, got: torch.Tensor, expected: torch.Tensor, expected64, tol: Tolerance):
    """Chunk by chunk: a first pass checks non-finite elements and measures the float64 reference
    (largest magnitude, RMS, PyTorch's own error), a second measures the candidate's error."""
    if tol.policy == "fixed" or expected64 is None:
        return _compare_fixed(path, got, expected, tol)
    g, e, e64 = _flat(got), _flat(expected), _flat(expected64)
    numel, shape, device = g.numel(), got.shape, expected.device
    nonfinite, overflow_bad = _FirstBad(), _FirstBad()
    overflowed, scale, squares, reference_error = 0, 0.0, 0.0, 0.0
    for a, b in _spans(numel):
        gc, ec, e64c = g[a:b].to(device), e[a:b], e64[a:b].to(device)
        finite = torch.isfinite(e64c)
        # PyTorch at the problem's dtype is non-finite where float64 is not (fp16 sums of squares past
        # 65504): no candidate could match both, so either is accepted there, and PyTorch's error is
        # measured on the other elements only.
        overflow = finite & ~torch.isfinite(ec)
        nonfinite.update(a, _nonfinite(gc, e64c) & ~overflow, gc, e64c)
        count = int(overflow.sum())
        if count:
            overflowed += count
            same = (torch.isnan(gc) & torch.isnan(ec)) | (torch.isinf(gc) & (gc == ec))
            overflow_bad.update(a, overflow & ~torch.isfinite(gc) & ~same, gc, e64c, ec)
        ref64 = torch.where(finite, e64c, 0.0)
        native64 = torch.where(finite & ~overflow, ec.double(), ref64)
        scale = max(scale, float(ref64.abs().max()))
        squares += float(ref64.square().sum())
        reference_error = max(reference_error, float((native64 - ref64).abs().max()))
    if nonfinite.count:
        return Comparison(Verdict.MISMATCH, _nonfinite_message(path, shape, nonfinite))
    if overflow_bad.count:
        return Comparison(Verdict.MISMATCH, _overflow_message(path, shape, got.dtype, overflow_bad))
    rms = (squares / numel) ** 0.5 if numel else 0.0
    allowed = allowed_error(scale, rms, reference_error, got.dtype, tol)
    errors, loose = _Errors(), True
    for a, b in _spans(numel):
        gc, e64c = g[a:b].to(device), e64[a:b].to(device)
        finite = torch.isfinite(e64c)
        ref64 = torch.where(finite, e64c, 0.0)
        judged = finite & torch.isfinite(gc)  # an accepted inf/NaN at an overflowed element counts as exact
        err = errors.update(a, torch.where(judged, gc.double(), ref64), ref64, allowed)
        loose = loose and bool((err <= LOOSE_TOLERANCE * (ref64.abs() + rms)).all())
    if not numel:
        errors.allowed = allowed
    stats = errors.stats(path, shape, numel, reference_error, overflowed)
    note = _overflow_note(overflowed, got.dtype) if overflowed else ""
    if not stats.mismatched:
        return Comparison(Verdict.OK, note, stats, [timed_bound(allowed, reference_error, scale)])
    verdict = Verdict.PRECISION if loose else Verdict.MISMATCH
    return Comparison(verdict, _mismatch_message(stats, verdict, got.dtype), stats)


def _compare_fixed(path: str, got: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> Comparison:
    g, e = _flat(got), _flat(expected)
    numel, shape = g.numel(), got.shape
    nonfinite = _FirstBad()
    for a, b in _spans(numel):
        gc = g[a:b].to(e.device)
        nonfinite.update(a, _nonfinite(gc, e[a:b]), gc, e[a:b])
    if nonfinite.count:
        return Comparison(Verdict.MISMATCH, _nonfinite_message(path, shape, nonfinite))
    atol, rtol = fixed_tolerances(got.dtype)
    atol = tol.atol if tol.atol is not None else atol
    rtol = tol.rtol if tol.rtol is not None else rtol
    errors, scale = _Errors(), 0.0
    for a, b in _spans(numel):
        finite = torch.isfinite(e[a:b])
        ref = torch.where(finite, e[a:b].double(), 0.0)
        scale = max(scale, float(ref.abs().max())) if b > a else scale
        errors.update(a, torch.where(finite, g[a:b].to(e.device).double(), 0.0), ref, atol + rtol * ref.abs())
    stats = errors.stats(path, shape, numel)
    if stats.mismatched:
        return Comparison(Verdict.MISMATCH, _mismatch_message(stats, Verdict.MISMATCH), stats)
    return Comparison(Verdict.OK, stats=stats, bounds=[timed_bound(atol + rtol * scale, 0.0, scale)])


def _compare_exact(path: str, got: torch.Tensor, expected: torch.Tensor) -> Comparison:
    g, e = _flat(got), _flat(expected)
    first = _FirstBad()
    for a, b in _spans(g.numel()):
        gc = g[a:b].to(e.device)
        first.update(a, gc != e[a:b], gc, e[a:b])
    if not first.count:
        return Comparison(Verdict.OK)
    return Comparison(
        Verdict.MISMATCH,
        f"{path}: got {first.got} at index {_fmt_index(_index(first.index, got.shape))}, "
        f"expected {first.expected} ({first.count} of {got.numel()} elements differ; "
        f"{got.dtype} outputs must match exactly)",
    )


def compare_outputs(got: Any, expected: Any, expected64: Any, tol: Tolerance) -> Comparison:
    """Compare a candidate's output with the reference's (``expected64``: float64 run, or None).
    The comparison runs on ``expected``'s device, a chunk at a time: ``got`` and ``expected64`` may
    live elsewhere (the host: the answer as read from the runner, a float64 reference the GPU could
    not hold) and are moved a chunk at a time.

    Returns the first failing leaf's verdict, else ``ok`` with the stats of the worst leaf and, as
    its message, notes on elements judged specially (where PyTorch overflowed), if any.
    """
    structure = _structure_error(got, expected, "output")
    if structure:
        return Comparison(Verdict.WRONG_SHAPE, structure)
    leaves64 = _leaves(expected64, "output") if expected64 is not None else None
    worst: ErrorStats | None = None
    notes: list[str] = []
    bounds: list[float | None] = []
    for n, ((path, g), (_, e)) in enumerate(zip(_leaves(got, "output"), _leaves(expected, "output"), strict=True)):
        e64 = leaves64[n][1] if leaves64 is not None else None
        leaf = isinstance(e, torch.Tensor)  # a tensor leaf of the output, as a timed batch holds them
        if leaf:
            bounds.append(None)  # exact, unless a float comparison below says what it allows
        else:
            if not isinstance(e, (bool, int, float, complex)):  # None, a string: nothing numeric to compare
                if g != e:
                    return Comparison(Verdict.MISMATCH, f"{path}: got {repr(g)[:100]}, expected {repr(e)[:100]}")
                continue
            g, e = torch.tensor(g), torch.tensor(e)
            e64 = e.double() if e.is_floating_point() else None
        if g.dtype != e.dtype:
            return Comparison(Verdict.WRONG_DTYPE, f"{path}: dtype {g.dtype} differs from the expected {e.dtype}")
        if g.is_complex():
            g, e = torch.view_as_real(g), torch.view_as_real(e)
            e64 = torch.view_as_real(e64) if e64 is not None else None
        if g.is_floating_point():
            result = _compare_float(path, g, e, e64 if tol.policy == "float64" else None, tol)
        else:
            result = _compare_exact(path, g, e)
        if not result.ok:
            return result
        if result.message:
            notes.append(f"{path}: {result.message}")
        if leaf and result.bounds:
            bounds[-1] = result.bounds[0]
        if result.stats and (worst is None or result.stats.max_abs_error > worst.max_abs_error):
            worst = result.stats
    return Comparison(Verdict.OK, "; ".join(notes), worst, bounds)
