"""Rewards from an evaluation outcome: correctness + speedup + profiling coverage, and tiered speedup.

Infrastructure errors are not the candidate's doing: these rewards return None for them, and callers
must drop such samples rather than train on a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tritongym.evaluate.result import Category
from tritongym.rewards.outcome import category, lazy, reward_coverage, timing_untrusted, trusted_speedup


@dataclass(frozen=True)
class VerifiableReward:
    """r = w_correct * correct + w_speedup * clip(speedup, 0, cap) + w_coverage * coverage * correct; a lazy
    result earns no speed term (``w_speedup``)."""

    w_correct: float = 0.5
    """Weight of being correct."""
    w_speedup: float = 0.5
    """Weight of the (clipped) speedup over the reference; 0 where timing is unavailable, untrusted
    (``timing_untrusted``: no speedup) or flagged implausible by the roofline check, and for a lazy
    result (``outcome.lazy``: a ``torch_compute`` or ``host_read`` finding), whose speedup is PyTorch's
    or the host's, not its kernels' (red team 23 #3: PyTorch twice as fast as the reference beside a
    token launch earned 1.5, above every honest kernel slower than the reference)."""
    speedup_cap: float = 3.0
    """Speedups above this earn no more (guards against timing outliers)."""
    w_coverage: float = 0.5
    """Weight of coverage (PR): the share of GPU time in the candidate's own Triton kernels where profiled;
    unprofiled (the CPU), 1 for a correct result without a ``torch_compute`` or ``host_read`` finding and
    0 for one with (``outcome.reward_coverage``)."""
    hack_penalty: float = -1.0
    """Reward of a verdict in the ``hack`` category (every hack_* verdict and uninitialized_output)."""
    failure: float = 0.0
    """Reward of a ``failed`` or ``incorrect`` verdict."""

    def __call__(self, result: Any) -> float | None:
        kind = category(result)
        if kind is Category.INFRASTRUCTURE:
            return None
        if kind is Category.HACK:
            return self.hack_penalty
        if kind is not Category.OK:
            return self.failure
        speedup = None if lazy(result) else trusted_speedup(result)
        coverage = reward_coverage(result)
        reward = self.w_correct
        if speedup is not None:
            reward += self.w_speedup * min(max(speedup, 0.0), self.speedup_cap)
        if coverage is not None:
            reward += self.w_coverage * coverage
        return reward


@dataclass(frozen=True)
class TieredReward:
    """A step function of the speedup for correct kernels, fixed values for the rest.

    A tier pays the speed of the candidate's own kernels: a correct result with a finding that part of
    forward's work ran outside them (``outcome.lazy``: PyTorch compute under the ``penalize`` policy, or
    host code fed by reads of device memory) earns no tier, and is paid as an untrusted timing is, no
    more than a slow honest kernel. A token launch beside PyTorch's own answer times as fast as the
    reference (speedup about 1) and earned the 1.0x tier, above every honest kernel slower than PyTorch
    (red team 21 #6)."""

    tiers: tuple[tuple[float, float], ...] = ((3.0, 1.0), (2.0, 0.8), (1.5, 0.6), (1.2, 0.4), (1.0, 0.2))
    """(minimum speedup, reward) pairs; the first one reached counts, so keep them descending."""
    slower: float = -0.1
    """Correct but slower than the reference."""
    untimed: float = 0.0
    """Correct, but no speedup was measured (CPU interpreter) or it was flagged implausible. A timing
    the evaluator could not trust (``timing_untrusted``) pays the lower of this and ``slower``: a slow
    kernel must not gain by keeping the GPU busy until its timing gives up; so does a lazy result (the
    class's docstring)."""
    not_correct: float = -1.0
    """Every verdict of the ``failed`` (did not parse, load, compile or finish) and ``incorrect``
    (raised, or returned a wrong output) categories alike: once its code runs, which of the two a
    failure lands in is the candidate's choice (a kernel's compile error caught and re-raised as a
    plain exception, or turned into a wrong output), so paying one more than the other would teach
    try/except wrappers around every launch."""
    hack_penalty: float = -1.0
    """The ``hack`` category (every hack_* verdict and uninitialized_output)."""

    def __call__(self, result: Any) -> float | None:
        kind = category(result)
        if kind is Category.INFRASTRUCTURE:
            return None
        if kind is Category.HACK:
            return self.hack_penalty
        if kind in (Category.FAILED, Category.INCORRECT):
            return self.not_correct
        if lazy(result):
            return min(self.untimed, self.slower)
        speedup = trusted_speedup(result)
        if speedup is None:
            return min(self.untimed, self.slower) if timing_untrusted(result) else self.untimed
        for threshold, reward in self.tiers:
            if speedup >= threshold:
                return reward
        return self.slower
