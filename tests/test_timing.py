"""Timing statistics (pure functions): the median's confidence interval, the paired speedup,
the stopping rule and the roofline check. The GPU loop is tested in tests/gpu."""

import math
import random
import statistics

import pytest

from tritongym.evaluate import timing


def test_median_ci_uses_the_order_statistics_of_conovers_table():
    samples = list(range(1, 101))  # n = 100: ranks 40 and 61 (1-based) at 95%
    median, low, high = timing.median_ci(samples)
    assert median == 50.5 and (low, high) == (40, 61)


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(0)
    covered = 0
    for _ in range(2000):
        _, low, high = timing.median_ci([rng.expovariate(1.0) for _ in range(60)])
        covered += low <= math.log(2) <= high
    assert 0.93 <= covered / 2000 <= 0.98


def test_small_samples_clamp_to_the_extremes():
    assert timing.median_ci([3.0]) == (3.0, 3.0, 3.0)
    assert timing.median_ci([1.0, 2.0, 9.0]) == (2.0, 1.0, 9.0)
    with pytest.raises(ValueError):
        timing.median_ci([])


def test_paired_speedup_cancels_a_drift_that_the_ratio_of_medians_would_not():
    # The GPU slows down by 30% halfway; every pair was measured back to back, so each ratio is 2.
    drift = [1.0] * 50 + [1.3] * 50
    reference = [2.0 * d for d in drift]
    candidate = list(drift)
    summary = timing.summarise(reference, candidate)
    assert summary.speedup == 2.0 and summary.speedup_ci == (2.0, 2.0) and summary.precision == 0.0
    assert summary.reference_ms == pytest.approx(2.3) and summary.candidate_ms == pytest.approx(1.15)


def test_summarise_rejects_unpaired_samples():
    with pytest.raises(ValueError):
        timing.summarise([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        timing.summarise([], [])


def test_spread_is_the_relative_interquartile_range():
    assert timing.relative_iqr([1.0, 1.0, 1.0, 1.0]) == 0.0
    samples = [float(x) for x in range(1, 101)]
    q1, _, q3 = statistics.quantiles(samples, n=4)
    assert timing.relative_iqr(samples) == pytest.approx((q3 - q1) / 50.5)


def _summary(reps: int, noise: float) -> timing.Summary:
    rng = random.Random(1)
    reference = [2.0 * (1 + rng.uniform(-noise, noise)) for _ in range(reps)]
    return timing.summarise(reference, [1.0] * reps)


def test_stop_rule_waits_for_min_reps_then_the_target_then_the_budget():
    quiet = _summary(timing.MIN_REPS - 10, 0.001)
    assert timing.stop_reason(quiet, target=0.01, elapsed_s=0.1, budget_s=10) is None
    assert timing.stop_reason(_summary(timing.MIN_REPS, 0.001), 0.01, 0.1, 10) == "target"
    noisy = _summary(timing.MIN_REPS, 0.5)
    assert noisy.precision > 0.01
    assert timing.stop_reason(noisy, 0.01, 0.1, 10) is None
    assert timing.stop_reason(noisy, 0.01, 10.0, 10) == "budget"


def test_roofline_flags_a_time_below_reading_the_inputs_once():
    bandwidth = 4e12  # bytes/s
    one_gb = 10**9
    floor_ms = one_gb / (timing.ROOFLINE_SLACK * bandwidth) * 1e3
    assert timing.implausible(floor_ms * 1.01, one_gb, bandwidth) is None
    message = timing.implausible(floor_ms / 10, one_gb, bandwidth)
    assert message and "evaded" in message and "1000.0 MB" in message
    assert timing.implausible(1e-6, one_gb, 0.0) is None  # bandwidth unknown: no claim
