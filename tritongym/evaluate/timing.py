"""Statistics of the judge's timing (judge/speed.py runs the batches) and the device's copy bandwidth.

A repetition measures four brackets (speed.py): the reference's batch and the candidate's, back to
back in a secret order, and each side's empty bracket (the same bracket without forwards; the
candidate's is closed by the judge's twin, so it holds the hand-off between CUDA contexts). What
the statistics do with them (pure functions, tested on the CPU):

* **Contention.** A repetition in which one of the judge's fixed workloads (the L2 flush at the
  start of every bracket, the probe at its end, the hand-offs to the twin) took much longer than the
  same workload measured before any candidate ran had company on the GPU (:func:`contention`,
  ``CONTENDED_FACTOR``): it is not a measurement and is repeated; too many of them and the timing
  is not trusted (``MAX_CONTENDED_REPS``). Only what the GPU timed is evidence: a workload queued
  after the GPU had caught up with the host (a candidate's bracket ends only once the judge saw its
  ``done``; a forward that waits for the GPU on the host) is timed by the host's launch of it, and
  reads 0 (speed.gpu_timed).
* **Subtraction** (:func:`subtracted`). Each side's net time is its bracket less one per-job
  estimate of its empty bracket, never the same repetition's (that one is as noisy as the bracket
  it would be taken from): the median of the uncontended repetitions' empty brackets. On the
  candidate's side that is the twin's empty bracket less its hand-off (the judge's own copies,
  flush and probe) plus the hand-off to the runner's own context (measured with an empty batch of
  the runner's every repetition), at most the twin's times ``1 + HAND_OFF_SLACK``, the twin's at
  most the hand-off calibrated with nobody else on the GPU times ``HAND_OFF_CEILING``. A runner
  that slows its own hand-off gains at most that slack of the twin's; contention that inflates the
  twin's can make the candidate faster by the ceiling's margin over the honest hand-off at most,
  per batch; a contended reference bracket is what the contention check is for.
* **Validity** (:func:`rep_problem`). A repetition whose net time on either side is below
  ``NOISE_FLOOR`` times the noise of what was subtracted from it (the hand-off's, mostly: its
  signal does not clearly dominate it), or whose candidate's net time is below the physical floor
  (reading its inputs once at ``ROOFLINE_SLACK`` times the copy bandwidth), is not a measurement:
  it is counted (``invalid_reps``) and repeated. A reported speedup is therefore at most the
  reference's batch over ``NOISE_FLOOR`` times the hand-off, and never beyond the roofline.
  speed.py makes the batch longer when the candidate's signal is too small next to the hand-off
  (``SIGNAL_FACTOR``).
* **Speedup.** The paired ratios reference / candidate of the valid repetitions (each pair was
  measured back to back, so its ratio cancels slow drifts of the GPU's clocks); the speedup is
  their *lower* median (for an even count the smaller of the two middle ratios, never their mean),
  its 95% confidence interval from order statistics.
* **Stopping** (:func:`stop_reason`). Timing stops when the interval is within ``target`` of the
  speedup (after ``MIN_REPS`` valid repetitions), or at the time budget once at least
  ``MIN_VALID_REPS`` valid repetitions exist and the interval is within ``TRUSTED_PRECISION``. It
  never stops for the budget with less; it goes on up to a hard ceiling (:func:`ceiling_s`), and
  a timing that ends there, or with too many contended repetitions, is not trusted: the result has
  no speedup (only the reasons in ``TRUSTED`` give one).
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
"""Valid repetitions before the precision target may stop the timing."""
MIN_VALID_REPS = 5
"""Valid repetitions without which the time budget never stops the timing (odd: the speedup is
then a ratio actually measured, the middle one)."""
MAX_REPS = 20000
CHECK_BATCH = 10
"""The stopping rule is evaluated every this many repetitions (and after every one past the budget)."""
TRUSTED_PRECISION = 0.25
"""The budget stops the timing only once the speedup's interval half-width is within this fraction
of it; a wider one at the ceiling is not trusted."""
EXTRA_S = 2.0
"""Past the budget, timing goes on for at most the longer of this and the budget itself (the hard
ceiling), to gather ``MIN_VALID_REPS`` valid repetitions."""
MAX_CONTENDED_REPS = 16
"""Timing gives up (no speedup) once this many repetitions had company on the GPU and they
outnumber the valid ones."""
CONTENDED_FACTOR = 2.0
"""A fixed workload of the judge's (flush, probe, hand-off) that took more than this many times its
clean duration, plus ``CONTENDED_GRACE_S``, had company on the GPU."""
CONTENDED_GRACE_S = 20e-6
"""Absolute jitter allowed on a fixed workload before it counts as contended."""
HAND_OFF_SLACK = 0.05
"""The runner's own hand-off subtracted is at most the twin's (the same repetitions') times one plus
this: honest runners measured 0-5% above the twin on an H200 (medians per job); a runner that slows
its own hand-off (work queued after its ``done``) gains at most this, less its honest excess."""
HAND_OFF_CEILING = 1.5
"""The twin's hand-off subtracted is at most the clean one (calibrated when the judge started, with
nobody else on the GPU) times this: a slower one is charged to the candidate. During jobs the
twin's hand-offs measured 1.03-1.36 times the clean one on an H200 (neither idle contexts nor the
length of the wait before ``go`` explain it), so a cap at 1.1 charged honest candidates 20-80 us a
batch, 4-8% of a 50 us call's time in a batch of 10."""
NOISE_FLOOR = 0.5
"""A side's net time must be at least this fraction of its noise: all that was subtracted from the
reference's; the hand-off and ``COPY_NOISE`` of the rest from the candidate's."""
COPY_NOISE = 0.1
"""The part of the candidate's subtracted copies (the judge's own work, hardly jittering) counted as
noise."""
SIGNAL_FACTOR = 4.0
"""speed.py lengthens a batch whose candidate's net time is below this many times its noise (as far
as the batch limits and memory allow)."""


def ceiling_s(budget_s: float) -> float:
    """The hard limit of one candidate's timing: the budget plus at most ``max(EXTRA_S, budget)``."""
    return budget_s + max(EXTRA_S, budget_s)


def lower_median(samples: Sequence[float]) -> float:
    """The median of an odd count; the smaller middle value of an even one (never a mean: the mean
    of two ratios is as large as the larger one allows)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    return ordered[(len(ordered) - 1) // 2]


def median_ci(samples: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """Lower median (:func:`lower_median`) and the median's distribution-free confidence interval
    (order statistics, normal approximation of the binomial): ranks n/2 -/+ z*sqrt(n)/2, clamped
    to the sample."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    n = len(ordered)
    half = z * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half) - 1)
    high = min(n - 1, math.ceil(n / 2 + half))
    return lower_median(ordered), ordered[low], ordered[high]


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
    _, ref_low, ref_high = median_ci(reference_ms)
    _, cand_low, cand_high = median_ci(candidate_ms)
    speedup, low, high = median_ci(ratios)  # the lower median: conservative for an even count
    return Summary(
        reference_ms=statistics.median(reference_ms),
        reference_ci_ms=(ref_low, ref_high),
        candidate_ms=statistics.median(candidate_ms),
        candidate_ci_ms=(cand_low, cand_high),
        speedup=speedup,
        speedup_ci=(low, high),
        spread=relative_iqr(candidate_ms),
        reps=len(candidate_ms),
    )


@dataclass(frozen=True)
class Clean:
    """The judge's fixed workloads as measured when it started, with nobody else on the GPU
    (seconds); 0 where unknown (no claim is made from it)."""

    flush_s: float = 0.0
    """The L2 flush at the start of every bracket."""
    probe_s: float = 0.0
    """The probe at the end of every bracket."""
    hand_off_s: float = 0.0
    """Handing a batch to another CUDA context (the twin's) and back."""


WORKLOADS = ("L2 flush", "end probe", "hand-off")
"""The judge's fixed workloads whose slowdown marks a repetition as contended (:func:`contention`)."""


def contention(flushes: Sequence[float], probes: Sequence[float], hand_offs: Sequence[float],
               clean: Clean) -> str | None:  # fmt: skip
    """Why a repetition had company on the GPU, or None: one of its brackets' flushes or end probes,
    or one of its hand-offs to the twin and back, took more than ``CONTENDED_FACTOR`` times the clean
    one plus ``CONTENDED_GRACE_S`` (the contexts on a GPU are time-sliced: another one's work delays
    ours, and a hand-off waits for every other context's time slice). A workload the GPU did not
    time reads 0 and says nothing; so does every workload whose clean duration is unknown (0)."""
    for what, values, base in zip(WORKLOADS, (flushes, probes, hand_offs),
                                  (clean.flush_s, clean.probe_s, clean.hand_off_s), strict=True):  # fmt: skip
        if base <= 0:
            continue
        bound = CONTENDED_FACTOR * base + CONTENDED_GRACE_S
        slowest = max(values, default=0.0)
        if slowest > bound:
            return f"a {what} took {slowest * 1e6:.0f} us (clean: {base * 1e6:.0f} us)"
    return None


@dataclass(frozen=True)
class Rep:
    """One repetition as speed.py measured it (seconds per batch)."""

    reference: float
    candidate: float
    empty: float
    """The reference's bracket without forwards."""
    remote_empty: float
    """The candidate's bracket without forwards, closed by the judge's twin."""
    hand_off: float
    """The hand-off alone, inside ``remote_empty``."""
    contended: str | None = None
    """Why the repetition had company on the GPU (:func:`contention`), or None."""
    runner_hand_off: float = 0.0
    """The hand-off to the runner's context and back alone (speed.Bench.runner_hand_off); 0 where
    it was not measured."""


def contended_by(reps: Sequence[Rep]) -> dict[str, int]:
    """Contended repetitions by the workload that showed it (the first one over its bound): which of
    the judge's fixed workloads ran slow says where the company was (a false alarm, too)."""
    counts: dict[str, int] = {}
    for rep in reps:
        if rep.contended:
            what = next((w for w in WORKLOADS if f"a {w} took" in rep.contended), "other")
            counts[what] = counts.get(what, 0) + 1
    return counts


@dataclass(frozen=True)
class Subtraction:
    """What is subtracted from every bracket of a timing (seconds, :func:`subtracted`)."""

    local: float
    """From every reference bracket: its empty bracket (the flush and the probe)."""
    copies: float
    """From every candidate bracket, besides the hand-off: its empty bracket's copies, flush and probe."""
    hand_off: float
    """From every candidate bracket: the hand-off to the runner's context and back."""

    @property
    def remote(self) -> float:
        return self.copies + self.hand_off

    @property
    def candidate_noise(self) -> float:
        """How far the candidate's net time can be off: the hand-off jitters (the other context's
        start), the copies hardly (judge's own work): ``hand_off + COPY_NOISE * copies``."""
        return self.hand_off + COPY_NOISE * self.copies


def subtracted(reps: Sequence[Rep], clean_hand_off_s: float) -> Subtraction:
    """What is subtracted from every reference and every candidate bracket: the medians of the
    uncontended repetitions' empty brackets (of all where none is uncontended); on the candidate's
    side the twin's empty bracket less its hand-off (the judge's copies, flush and probe) plus the
    hand-off to the runner's own context, at most the twin's times ``1 + HAND_OFF_SLACK`` (the
    twin's where the runner's was not measured), the twin's at most the clean one times
    ``HAND_OFF_CEILING`` (where it is known)."""
    if not reps:
        raise ValueError("no repetitions")
    clean = [r for r in reps if r.contended is None] or list(reps)
    local = statistics.median(r.empty for r in clean)
    copies = statistics.median(r.remote_empty - r.hand_off for r in clean)
    hand_off = statistics.median(r.hand_off for r in clean)
    if clean_hand_off_s > 0:
        hand_off = min(hand_off, clean_hand_off_s * HAND_OFF_CEILING)
    runner = [r.runner_hand_off for r in clean if r.runner_hand_off > 0]
    if runner:
        hand_off = min(statistics.median(runner), hand_off * (1 + HAND_OFF_SLACK))
    return Subtraction(max(local, 0.0), max(copies, 0.0), max(hand_off, 0.0))


def rep_problem(rep: Rep, less: Subtraction, floor_s: float) -> str | None:
    """Why a repetition is not a measurement (None: it is one): it had company, or a side's net time
    (its bracket less what is subtracted) is not above ``NOISE_FLOOR`` times that side's noise (the
    reference's: all it loses; the candidate's: ``Subtraction.candidate_noise``), or the
    candidate's is below ``floor_s`` (the batch's physical floor)."""
    if rep.contended:
        return "contended"
    sides = (("reference", rep.reference - less.local, less.local),
             ("candidate", rep.candidate - less.remote, less.candidate_noise))  # fmt: skip
    for side, net, noise in sides:
        if net <= 0 or net < NOISE_FLOOR * noise:
            return f"{side}_noise"
    if rep.candidate - less.remote < floor_s:
        return "physical_floor"
    return None


@dataclass(frozen=True)
class Tally:
    """What a timing's repetitions amount to."""

    summary: Summary | None
    """Of the valid repetitions (per call, milliseconds); None where there is none."""
    subtracted_s: tuple[float, float]
    """What was subtracted from each reference and candidate bracket (seconds)."""
    invalid: dict[str, int]
    """Repetitions that were not measurements, by reason (``contended``, ``reference_noise``,
    ``candidate_noise``, ``physical_floor``)."""

    @property
    def contended(self) -> int:
        return self.invalid.get("contended", 0)


def tally(reps: Sequence[Rep], count: int, clean_hand_off_s: float, floor_s: float = 0.0) -> Tally:
    """Net times per call of the valid repetitions of batches of ``count`` calls, and their summary.
    ``floor_s``: one call's physical floor (reading its inputs once, :func:`floor_s`)."""
    less = subtracted(reps, clean_hand_off_s)
    local, remote = less.local, less.remote
    valid: tuple[list[float], list[float]] = ([], [])
    invalid: dict[str, int] = {}
    for rep in reps:
        problem = rep_problem(rep, less, floor_s * count)
        if problem:
            invalid[problem] = invalid.get(problem, 0) + 1
            continue
        valid[0].append((rep.reference - local) * 1e3 / count)
        valid[1].append((rep.candidate - remote) * 1e3 / count)
    return Tally(summarise(*valid) if valid[0] else None, (local, remote), invalid)


TRUSTED = ("target", "budget", "max_reps")
"""The stop reasons after which the speedup is reported; ``ceiling`` and ``contended`` are not."""


def stop_reason(summary: Summary | None, target: float, elapsed_s: float, budget_s: float, contended: int = 0,
                ceiling: float | None = None) -> str | None:  # fmt: skip
    """Why to stop now, or None to keep timing: ``target`` (``MIN_REPS`` valid repetitions and the
    interval within ``target``), ``budget`` (past it with ``MIN_VALID_REPS`` valid repetitions and
    the interval within ``TRUSTED_PRECISION``), ``max_reps``, ``contended`` (``MAX_CONTENDED_REPS``
    contended repetitions, more than the valid ones) or ``ceiling`` (past ``ceiling``, by default
    :func:`ceiling_s` of the budget). Only the first three give a speedup (:data:`TRUSTED`)."""
    valid = summary.reps if summary is not None else 0
    if valid >= MIN_REPS and summary.precision <= target:
        return "target"
    if elapsed_s >= budget_s and valid >= MIN_VALID_REPS and summary.precision <= TRUSTED_PRECISION:
        return "budget"
    if valid >= MAX_REPS:
        return "max_reps"
    if contended >= MAX_CONTENDED_REPS and contended > valid:
        return "contended"
    if elapsed_s >= (ceiling_s(budget_s) if ceiling is None else ceiling):
        return "ceiling"
    return None


ROOFLINE_SLACK = 1.5
"""A candidate must not read its inputs faster than this many times the measured copy bandwidth."""


def floor_s(bytes_read: int, bandwidth: float) -> float:
    """One call's physical floor (seconds): reading its inputs once from memory (the L2 was
    flushed) at ``ROOFLINE_SLACK`` x the device's copy bandwidth; 0 where either is unknown."""
    if bandwidth <= 0 or bytes_read <= 0:
        return 0.0
    return bytes_read / (ROOFLINE_SLACK * bandwidth)


def implausible(candidate_ms: float, bytes_read: int, bandwidth: float) -> str | None:
    """Why the candidate's time is physically implausible (below :func:`floor_s`), or None."""
    floor_ms = floor_s(bytes_read, bandwidth) * 1e3
    if not floor_ms or candidate_ms >= floor_ms:
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
