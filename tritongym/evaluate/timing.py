"""Statistics of the judge's timing (judge/speed.py runs the batches) and the device's copy bandwidth.

Reference and candidate batches alternate; each pair was measured back to back, so the ratio of a
pair cancels slow drifts of the GPU's clocks. Repetition is adaptive: timing stops when the 95%
confidence interval of the speedup (median of the paired ratios reference / candidate, interval from
order statistics) is within ``target`` of the median, or when the time budget or ``MAX_REPS`` is
reached. The statistics are pure functions (tested on the CPU).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import torch

_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize

Z95 = 1.959963984540054
MIN_REPS = 30
"""Timed calls of each side before the stopping rule is consulted."""
MAX_REPS = 20000
CHECK_BATCH = 10
"""The stopping rule is evaluated every this many repetitions (and after every one past the budget)."""


def median_ci(samples: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """Median and its distribution-free confidence interval (order statistics, normal
    approximation of the binomial): ranks n/2 -/+ z*sqrt(n)/2, clamped to the sample."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    n = len(ordered)
    half = z * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half) - 1)
    high = min(n - 1, math.ceil(n / 2 + half))
    return statistics.median(ordered), ordered[low], ordered[high]


def relative_iqr(samples: Sequence[float]) -> float:
    """Interquartile range over the median (0 for fewer than 4 samples)."""
    if len(samples) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(samples, n=4)
    median = statistics.median(samples)
    return (q3 - q1) / median if median else 0.0


@dataclass(frozen=True)
class Summary:
    """Medians, confidence intervals and speedup of paired timings (milliseconds)."""

    reference_ms: float
    reference_ci_ms: tuple[float, float]
    candidate_ms: float
    candidate_ci_ms: tuple[float, float]
    speedup: float
    speedup_ci: tuple[float, float]
    spread: float
    reps: int

    @property
    def precision(self) -> float:
        """Half-width of the speedup's confidence interval relative to the speedup."""
        low, high = self.speedup_ci
        return (high - low) / (2 * self.speedup) if self.speedup > 0 else math.inf


def summarise(reference_ms: Sequence[float], candidate_ms: Sequence[float]) -> Summary:
    """Summary of interleaved pairs: ``reference_ms[i]`` and ``candidate_ms[i]`` were timed
    back to back, so their ratio cancels slow drifts of the GPU's clocks."""
    if len(reference_ms) != len(candidate_ms) or not reference_ms:
        raise ValueError("need the same, non-zero number of reference and candidate samples")
    tiny = 1e-9  # an event pair can read 0.0 ms for an empty call
    ratios = [r / max(c, tiny) for r, c in zip(reference_ms, candidate_ms, strict=True)]
    ref, ref_low, ref_high = median_ci(reference_ms)
    cand, cand_low, cand_high = median_ci(candidate_ms)
    speedup, low, high = median_ci(ratios)
    return Summary(
        reference_ms=ref,
        reference_ci_ms=(ref_low, ref_high),
        candidate_ms=cand,
        candidate_ci_ms=(cand_low, cand_high),
        speedup=speedup,
        speedup_ci=(low, high),
        spread=relative_iqr(candidate_ms),
        reps=len(candidate_ms),
    )


def stop_reason(summary: Summary, target: float, elapsed_s: float, budget_s: float) -> str | None:
    """Why to stop now (``target``, ``budget``, ``max_reps``), or None to keep timing."""
    if summary.reps >= MIN_REPS and summary.precision <= target:
        return "target"
    if elapsed_s >= budget_s:
        return "budget"
    if summary.reps >= MAX_REPS:
        return "max_reps"
    return None


ROOFLINE_SLACK = 1.5
"""A candidate must not read its inputs faster than this many times the measured copy bandwidth."""


def implausible(candidate_ms: float, bytes_read: int, bandwidth: float) -> str | None:
    """Why the candidate's time is physically implausible, or None: reading its inputs once from
    memory (the L2 was flushed) at ROOFLINE_SLACK x the device's copy bandwidth takes longer."""
    if bandwidth <= 0 or bytes_read <= 0:
        return None
    floor_ms = bytes_read / (ROOFLINE_SLACK * bandwidth) * 1e3
    if candidate_ms >= floor_ms:
        return None
    return (
        f"candidate median {candidate_ms * 1e3:.2f} us is below the {floor_ms * 1e3:.2f} us needed just to read its "
        f"{bytes_read / 1e6:.1f} MB of inputs at {ROOFLINE_SLACK:g}x the measured {bandwidth / 1e9:.0f} GB/s; "
        "the measurement was evaded, not beaten"
    )


def copy_bandwidth(device, size: int = 256 << 20, reps: int = 5) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write), best of ``reps``."""
    source = torch.empty(size, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    target.copy_(source)
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    best = math.inf
    for _ in range(reps):
        _record(start)
        target.copy_(source)
        _record(end)
        _synchronize(device)
        best = min(best, _elapsed(start, end))
    return 2 * size / (best / 1e3)
