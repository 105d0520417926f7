"""Timing statistics (pure functions): the median's confidence interval, the paired speedup,
the stopping rule and the roofline check. The GPU loop is tested in tests/gpu."""

import dataclasses
import math
import random
import statistics

import pytest

from tritongym.evaluate import timing


def test_median_ci_uses_the_order_statistics_of_conovers_table():
    samples = list(range(1, 101))  # n = 100: ranks 40 and 61 (1-based) at 95%
    median, low, high = timing.median_ci(samples)
    assert median == 50 and (low, high) == (40, 61)  # the lower median of an even count


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
    noisy = _summary(timing.MIN_REPS, 0.2)
    assert timing.TRUSTED_PRECISION >= noisy.precision > 0.01
    assert timing.stop_reason(noisy, 0.01, 0.1, 10) is None
    assert timing.stop_reason(noisy, 0.01, 10.0, 10) == "budget"


def test_the_budget_never_stops_a_timing_with_too_few_valid_reps_only_the_ceiling_does():
    few = _summary(timing.MIN_VALID_REPS - 1, 0.001)
    ceiling = timing.ceiling_s(0.3)
    assert ceiling == pytest.approx(0.3 + timing.EXTRA_S)
    assert timing.stop_reason(few, 0.01, 0.31, 0.3) is None  # past the budget, not past the ceiling
    assert timing.stop_reason(None, 0.01, 0.31, 0.3) is None  # no valid repetition yet
    assert timing.stop_reason(few, 0.01, ceiling, 0.3) == "ceiling"
    assert timing.stop_reason(None, 0.01, ceiling, 0.3) == "ceiling"
    assert timing.stop_reason(_summary(timing.MIN_VALID_REPS, 0.001), 0.01, 0.31, 0.3) == "budget"
    assert timing.ceiling_s(10.0) == 20.0  # a long budget is at most doubled
    for reason in ("ceiling", "contended"):
        assert reason not in timing.TRUSTED


def test_a_wide_interval_is_not_trusted_at_the_budget():
    wide = timing.summarise([2.0, 2.0, 2.0, 2.0, 2.0], [0.2, 1.0, 1.0, 1.0, 4.0])
    assert wide.precision > timing.TRUSTED_PRECISION
    assert timing.stop_reason(wide, 0.01, 1.0, 0.3) is None
    assert timing.stop_reason(wide, 0.01, 1.0, 0.3, ceiling=0.9) == "ceiling"


def test_many_contended_reps_give_up_once_they_outnumber_the_valid_ones():
    some = _summary(3, 0.001)
    assert timing.stop_reason(some, 0.01, 0.1, 10, contended=timing.MAX_CONTENDED_REPS) == "contended"
    assert timing.stop_reason(some, 0.01, 0.1, 10, contended=timing.MAX_CONTENDED_REPS - 1) is None
    plenty = _summary(timing.MAX_CONTENDED_REPS + 1, 0.5)
    assert timing.stop_reason(plenty, 0.01, 0.1, 10, contended=timing.MAX_CONTENDED_REPS) is None


# The case seen on an H100 with 4 sandboxes on the GPU (benchmarks/results/learning_gpu/fresh.jsonl):
# 07_reduce_tanh_rmsnorm, batches of 65 calls, two repetitions, the second one's hand-off 2.8 ms
# (clean: 0.3 ms). Old code: speedup 1515905.6 (the mean of the ratios 3.29 and 3.03e6).
FRESH_COUNT = 65
FRESH_CLEAN_HAND_OFF_S = 298.88e-6
FRESH_REPS = [
    timing.Rep(reference=3.636e-3, candidate=1.524e-3, empty=0.1e-3, remote_empty=0.45e-3, hand_off=0.30e-3),
    timing.Rep(reference=3.129e-3, candidate=2.9625e-3, empty=0.1e-3, remote_empty=2.963e-3, hand_off=2.813e-3),
]


def old_per_rep_speedup(reps, count):
    """What the judge computed before: each rep's own empty subtracted, floored at 1 ns; the median."""
    ref = [max(r.reference - r.empty, 1e-9) * 1e3 / count for r in reps]
    cand = [max(r.candidate - r.remote_empty, 1e-9) * 1e3 / count for r in reps]
    return statistics.median([a / max(b, 1e-9) for a, b in zip(ref, cand, strict=True)])


def test_the_two_ratios_of_the_fresh_case_give_their_lower_one_not_their_mean():
    summary = timing.summarise([0.054469, 0.046643], [0.016520, 1.538e-08])
    assert summary.speedup == pytest.approx(0.054469 / 0.016520)  # 3.3, not 1.5e6
    assert summary.reps == 2


def test_the_fresh_case_gives_a_sane_speedup_or_none():
    assert old_per_rep_speedup(FRESH_REPS, FRESH_COUNT) > 1e5  # the bug, as it was
    # with the hand-off's contention seen: the second repetition is repeated, not used
    clean = timing.Clean(flush_s=80e-6, probe_s=20e-6, hand_off_s=FRESH_CLEAN_HAND_OFF_S)
    why = [timing.contention([80e-6] * 4, [20e-6] * 4, [r.hand_off], clean) for r in FRESH_REPS]
    assert why[0] is None and "hand-off" in why[1]
    seen = [dataclasses.replace(r, contended=w) for r, w in zip(FRESH_REPS, why, strict=True)]
    result = timing.tally(seen, FRESH_COUNT, FRESH_CLEAN_HAND_OFF_S)
    assert result.summary.reps == 1 and result.contended == 1
    assert 2.0 < result.summary.speedup < 5.0
    assert timing.stop_reason(result.summary, 0.01, 0.5, 0.3) is None  # too few: timing goes on
    # even unseen, the bounded subtraction only makes the contended repetition's candidate slower
    blind = timing.tally(FRESH_REPS, FRESH_COUNT, FRESH_CLEAN_HAND_OFF_S)
    assert blind.summary.reps == 2 and 0.5 < blind.summary.speedup < 5.0
    local, remote = blind.subtracted_s
    assert remote <= 0.15e-3 + FRESH_CLEAN_HAND_OFF_S * timing.HAND_OFF_CEILING + 1e-12
    assert local == pytest.approx(0.1e-3)


def test_an_inflated_empty_bracket_gains_the_candidate_at_most_the_documented_slack():
    clean = timing.Rep(reference=10e-3, candidate=5.4e-3, empty=0.1e-3, remote_empty=0.4e-3, hand_off=0.3e-3)
    base = timing.tally([clean] * 5, 100, 0.3e-3).summary.speedup
    # the most the subtraction can be: the copies plus the clean hand-off and its slack
    bound = 10e-3 - 0.1e-3, 5.4e-3 - (0.1e-3 + 0.3e-3 * timing.HAND_OFF_CEILING)
    for inflation in (1e-3, 5e-3, 50e-3):
        hogged = dataclasses.replace(clean, remote_empty=clean.remote_empty + inflation, hand_off=0.3e-3 + inflation)
        worse = timing.tally([clean, clean, hogged, hogged, hogged], 100, 0.3e-3).summary
        assert worse.speedup <= bound[0] / bound[1] * (1 + 1e-9)
        assert worse.speedup <= base * 5e-3 / (5e-3 - (timing.HAND_OFF_CEILING - 1) * 0.3e-3) * (1 + 1e-9)
    # a contended empty bracket that is seen (contention()) is not used at all
    seen = dataclasses.replace(clean, remote_empty=5e-3, hand_off=4.9e-3, contended="hand-off")
    assert timing.tally([clean, clean, seen, seen, seen], 100, 0.3e-3).summary.speedup == pytest.approx(base)


def test_the_runners_own_hand_off_is_subtracted_and_an_inflated_one_gains_at_most_the_slack():
    """The runner's context costs more to switch to than the twin's: its own hand-off (an empty batch
    of the runner's) is what its bracket pays and what is subtracted, never more than the twin's
    plus the slack however slow the runner makes it, the twin's never more than the ceiling."""
    twin = timing.Rep(reference=1e-3, candidate=1.05e-3, empty=0.1e-3, remote_empty=0.4e-3, hand_off=0.3e-3)
    assert timing.subtracted([twin] * 3, 0.3e-3).hand_off == pytest.approx(0.3e-3)  # none measured: the twin's
    runner = dataclasses.replace(twin, runner_hand_off=0.31e-3)
    less = timing.subtracted([runner] * 3, 0.3e-3)
    assert less.hand_off == pytest.approx(0.31e-3) and less.copies == pytest.approx(0.1e-3)
    for inflated in (0.4e-3, 5e-3):
        worse = timing.subtracted([dataclasses.replace(twin, runner_hand_off=inflated)] * 3, 0.3e-3)
        assert worse.hand_off == pytest.approx(0.3e-3 * (1 + timing.HAND_OFF_SLACK))
    # a twin's hand-off above the clean one (as during jobs) is subtracted up to the ceiling, no further
    assert timing.subtracted([runner] * 3, 0.25e-3).hand_off == pytest.approx(0.31e-3)
    slow = timing.subtracted([runner] * 3, 0.1e-3)
    assert slow.hand_off == pytest.approx(0.1e-3 * timing.HAND_OFF_CEILING * (1 + timing.HAND_OFF_SLACK))
    # the median of the repetitions that measured it (a late one reads 0)
    mixed = [runner, runner, dataclasses.replace(twin, runner_hand_off=0.0)]
    assert timing.subtracted(mixed, 0.3e-3).hand_off == pytest.approx(0.31e-3)


def test_a_rep_below_the_noise_floor_or_the_physical_floor_is_not_a_measurement():
    less = timing.Subtraction(local=0.1e-3, copies=0.1e-3, hand_off=0.3e-3)
    assert less.remote == pytest.approx(0.4e-3)
    assert less.candidate_noise == pytest.approx(0.3e-3 + timing.COPY_NOISE * 0.1e-3)
    good = timing.Rep(reference=1e-3, candidate=1e-3, empty=0.1e-3, remote_empty=0.4e-3, hand_off=0.3e-3)
    assert timing.rep_problem(good, less, 0.0) is None
    tiny = dataclasses.replace(good, candidate=less.remote + timing.NOISE_FLOOR * less.candidate_noise * 0.9)
    assert timing.rep_problem(tiny, less, 0.0) == "candidate_noise"
    assert timing.rep_problem(dataclasses.replace(good, candidate=less.remote), less, 0.0) == "candidate_noise"
    assert timing.rep_problem(dataclasses.replace(good, reference=0.12e-3), less, 0.0) == "reference_noise"
    assert timing.rep_problem(good, less, floor_s=1e-3) == "physical_floor"
    assert timing.rep_problem(dataclasses.replace(good, contended="x"), less, 0.0) == "contended"
    # with nothing subtracted (no hand-off), a zero time is still no measurement
    zero = timing.Rep(reference=1e-3, candidate=0.0, empty=0.0, remote_empty=0.0, hand_off=0.0)
    assert timing.rep_problem(zero, timing.Subtraction(0.0, 0.0, 0.0), 0.0) == "candidate_noise"


def test_large_copies_count_little_as_noise():
    """A large problem: 2 ms of input copies in the candidate's bracket and its empty one, 0.3 ms of
    hand-off. A candidate batch of 0.5 ms is a measurement: the copies are the judge's own steady
    work, the hand-off is what jitters."""
    less = timing.Subtraction(local=0.1e-3, copies=2e-3, hand_off=0.3e-3)
    rep = timing.Rep(reference=3e-3, candidate=2.8e-3, empty=0.1e-3, remote_empty=2.3e-3, hand_off=0.3e-3)
    assert timing.rep_problem(rep, less, 0.0) is None


def test_the_tally_counts_invalid_reps_by_reason_and_summarises_the_rest():
    ok = timing.Rep(reference=2.1e-3, candidate=1.4e-3, empty=0.1e-3, remote_empty=0.4e-3, hand_off=0.3e-3)
    noise = dataclasses.replace(ok, candidate=0.45e-3)
    result = timing.tally([ok, ok, noise, ok, dataclasses.replace(ok, contended="slow flush")], 10, 0.3e-3)
    assert result.invalid == {"candidate_noise": 1, "contended": 1}
    assert result.summary.reps == 3 and result.summary.speedup == pytest.approx(2.0)
    assert result.summary.candidate_ms == pytest.approx(0.1)
    assert timing.tally([noise], 10, 0.3e-3).summary is None
    with pytest.raises(ValueError):
        timing.tally([], 10, 0.3e-3)


def test_contention_is_read_from_the_judges_fixed_workloads():
    clean = timing.Clean(flush_s=80e-6, probe_s=20e-6, hand_off_s=300e-6)
    assert timing.contention([85e-6, 90e-6, 80e-6, 81e-6], [21e-6] * 4, [320e-6] * 4, clean) is None
    assert "L2 flush" in timing.contention([85e-6, 1.2e-3, 80e-6, 81e-6], [21e-6] * 4, [320e-6] * 4, clean)
    assert "end probe" in timing.contention([85e-6] * 4, [21e-6, 2e-3, 20e-6, 20e-6], [320e-6] * 4, clean)
    assert "hand-off" in timing.contention([85e-6] * 4, [21e-6] * 4, [320e-6, 2.8e-3, 300e-6], clean)
    assert timing.contention([1.0], [1.0], [1.0], timing.Clean()) is None  # nothing calibrated: no claim


def test_contended_repetitions_are_counted_by_the_workload_that_ran_slow():
    """A result says which of the judge's workloads showed company (a false alarm's first clue)."""
    clean = timing.Clean(flush_s=80e-6, probe_s=20e-6, hand_off_s=300e-6)
    base = timing.Rep(reference=1e-3, candidate=1e-3, empty=1e-4, remote_empty=4e-4, hand_off=3e-4)
    slow = [([1.2e-3], [21e-6], [320e-6]), ([85e-6], [2e-3], [320e-6]), ([85e-6], [3e-3], [320e-6]),
            ([85e-6], [21e-6], [320e-6])]  # fmt: skip
    reps = [dataclasses.replace(base, contended=timing.contention(f, p, h, clean)) for f, p, h in slow]
    assert timing.contended_by(reps) == {"L2 flush": 1, "end probe": 2}


def test_roofline_flags_a_time_below_reading_the_inputs_once():
    bandwidth = 4e12  # bytes/s
    one_gb = 10**9
    floor_ms = one_gb / (timing.ROOFLINE_SLACK * bandwidth) * 1e3
    assert timing.implausible(floor_ms * 1.01, one_gb, bandwidth) is None
    message = timing.implausible(floor_ms / 10, one_gb, bandwidth)
    assert message and "evaded" in message and "1000.0 MB" in message
    assert timing.implausible(1e-6, one_gb, 0.0) is None  # bandwidth unknown: no claim


def test_a_a_timings_with_a_jittery_hand_off_give_a_speedup_of_one():
    """Both sides the same code (10 us a call, 500 calls), drifting clocks, a hand-off that jitters
    around its clean value, and now and then a contended repetition: the speedup is 1 within 1%."""
    rng = random.Random(7)
    count, clean_hand_off, copies, flush = 500, 300e-6, 120e-6, 80e-6
    reps = []
    for i in range(40):
        drift = 1 + 0.05 * math.sin(i / 5)
        work = count * 10e-6 * drift
        hand_off, twin_hand_off = (clean_hand_off * rng.uniform(0.9, 1.15) for _ in range(2))
        contended = "hand-off" if rng.random() < 0.1 else None
        reps.append(timing.Rep(
            reference=flush + work * rng.uniform(0.998, 1.002),
            candidate=copies + hand_off + work * rng.uniform(0.998, 1.002),
            empty=flush * rng.uniform(0.98, 1.02),
            remote_empty=copies + twin_hand_off,
            hand_off=twin_hand_off,
            contended=contended,
        ))  # fmt: skip
    result = timing.tally(reps, count, clean_hand_off)
    assert result.summary.speedup == pytest.approx(1.0, abs=0.01)
    assert result.summary.speedup_ci[0] <= 1.0 <= result.summary.speedup_ci[1] * 1.01
