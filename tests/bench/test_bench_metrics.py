"""Every metric against hand-computed examples."""

import math
from math import comb

import pytest
from helpers_bench import record

from tritongym.bench import metrics as m
from tritongym.evaluate.result import Verdict


def attempts(*records):
    return [m.attempt(r) for r in records]


def closed_form(n, c, k):
    return 1 - comb(n - c, k) / comb(n, k)


@pytest.mark.parametrize(
    ("n", "c", "k"), [(10, 3, 1), (10, 3, 5), (20, 7, 10), (5, 1, 5), (100, 37, 50), (3, 2, 2), (1, 1, 1)]
)
def test_pass_at_k_matches_the_closed_form(n, c, k):
    assert m.pass_at_k(n, c, k) == pytest.approx(closed_form(n, c, k), rel=1e-12)


def test_pass_at_k_edge_cases():
    assert m.pass_at_k(5, 0, 3) == 0.0  # nothing passes
    assert m.pass_at_k(5, 5, 3) == 1.0  # everything passes
    assert m.pass_at_k(5, 3, 3) == 1.0  # n - c < k: every draw of k contains a pass
    assert m.pass_at_k(2, 1, 3) is None  # n < k: undefined
    assert m.pass_at_k(4, 2, 1) == 0.5  # pass@1 is c / n
    # stable where the binomials overflow floats
    assert m.pass_at_k(2000, 1, 1000) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        m.pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        m.pass_at_k(3, 1, 0)


def test_mean_pass_at_k_averages_problems_and_leaves_out_short_ones():
    a = attempts(
        record("p", 0, 0, "ok"),
        record("p", 1, 0, "mismatch"),
        record("p", 2, 0, "compile_error"),
        record("q", 0, 0, "ok"),
        record("q", 1, 0, "ok"),
        record("q", 2, 0, "infrastructure_error"),  # excluded: q has n=2
        record("r", 0, 0, "no_code"),
        record("r", 1, 0, "timeout"),
        record("r", 2, 0, "ok"),
    )
    # pass@1: p 1/3, q 2/2, r 1/3
    assert m.mean_pass_at_k(a, 1) == pytest.approx((1 / 3 + 1 + 1 / 3) / 3)
    # pass@2: p 1 - C(2,2)/C(3,2) = 2/3, q 1, r 2/3
    assert m.mean_pass_at_k(a, 2) == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    # pass@3: q has only 2 scored samples and is left out
    assert m.mean_pass_at_k(a, 3) == pytest.approx(1.0)
    assert m.mean_pass_at_k(a, 4) is None


def test_categories_and_rates_exclude_infrastructure_errors():
    a = attempts(
        record("p", 0, 0, "ok"),
        record("p", 1, 0, "mismatch"),
        record("p", 2, 0, "compile_error"),
        record("p", 3, 0, "hack_no_triton"),
        record("p", 4, 0, "no_code"),
        record("p", 5, 0, "infrastructure_error"),
        record("p", 6, 0, "hack_forbidden_api"),
    )
    assert [x.category for x in a] == ["ok", "incorrect", "failed", "hack", "failed", "infrastructure", "hack"]
    # denominators: 6 scored attempts; compiled (EvalResult.compiled): ok, mismatch, hack_no_triton
    assert m.compile_rate(a) == pytest.approx(3 / 6)
    assert m.correct_rate(a) == pytest.approx(1 / 6)
    assert m.category_rate(a, "hack") == pytest.approx(2 / 6)
    assert m.category_rate(a, "failed") == pytest.approx(2 / 6)  # compile_error and no_code
    assert m.no_code_rate(a) == pytest.approx(1 / 6)
    assert m.category_counts(a) == {"ok": 1, "incorrect": 1, "failed": 2, "hack": 2, "infrastructure": 1}
    assert m.verdict_counts(a)["infrastructure_error"] == 1
    assert sum(m.verdict_counts(a).values()) == 7
    only_infra = attempts(record("p", 0, 0, "infrastructure_error"))
    assert m.correct_rate(only_infra) is None
    assert m.fast_p(only_infra, 1.0) is None


def test_categories_are_verdict_category_and_compile_rate_reads_the_result():
    for verdict in Verdict:
        assert m.verdict_category(verdict.value) == verdict.category.value
    assert m.verdict_category("no_code") == "failed"
    assert m.verdict_category("uninitialized_output") == "hack"  # was "incorrect" in the local stand-in
    ran = m.attempt(record("p", 0, 0, "timeout"))
    assert ran.category == "failed" and ran.compiled  # a failed attempt whose kernels ran
    stuck = record("p", 1, 0, "timeout")
    stuck.result["compiled"] = False  # the evaluator's word, not the verdict's, decides compile rate
    assert not m.attempt(stuck).compiled
    assert m.compile_rate([ran, m.attempt(stuck)]) == 0.5


def test_fast_p_conventions_differ_exactly_at_p():
    a = attempts(
        record("p", 0, 0, "ok", speedup=1.0),
        record("p", 1, 0, "ok", speedup=1.5),
        record("p", 2, 0, "ok", speedup=0.5),
        record("p", 3, 0, "mismatch"),
        record("p", 4, 0, "ok", speedup=2.0),
        record("p", 5, 0, "infrastructure_error"),
    )
    assert m.fast_p(a, 0.0, "kernelbench") == pytest.approx(4 / 5)
    assert m.fast_p(a, 0.0, "drkernel") == pytest.approx(4 / 5)
    assert m.fast_p(a, 1.0, "kernelbench") == pytest.approx(2 / 5)  # 1.5, 2.0
    assert m.fast_p(a, 1.0, "drkernel") == pytest.approx(3 / 5)  # 1.0, 1.5, 2.0
    assert m.fast_p(a, 1.5, "kernelbench") == pytest.approx(1 / 5)
    assert m.fast_p(a, 1.5, "drkernel") == pytest.approx(2 / 5)
    assert m.fast_p(a, 2.0, "kernelbench") == 0.0
    assert m.fast_p(a, 2.0, "drkernel") == pytest.approx(1 / 5)
    assert m.fast_p(a, 3.0, "drkernel") == 0.0
    with pytest.raises(ValueError, match="convention"):
        m.fast_p(a, 1.0, "fastest")


def test_fast_p_is_not_measured_on_the_cpu_and_fast_0_is_the_correct_rate():
    cpu = attempts(record("p", 0, 0, "ok"), record("p", 1, 0, "mismatch"))
    assert m.fast_p(cpu, 0.0) == m.correct_rate(cpu) == 0.5
    assert m.fast_p(cpu, 1.0) is None
    assert m.fast_p(cpu, 1.0, "drkernel") is None
    assert m.fast_p_at_k(cpu, 1.0, 1) is None
    nothing_correct = attempts(record("p", 0, 0, "mismatch"))
    assert m.fast_p(nothing_correct, 1.0) == 0.0  # truly none is fast


def test_flagged_speedups_never_count_as_fast():
    a = attempts(record("p", 0, 0, "ok", speedup=50.0, flagged=True), record("p", 1, 0, "ok", speedup=1.1))
    assert m.fast_p(a, 1.0) == pytest.approx(1 / 2)
    assert m.fast_p(a, 0.0) == 1.0
    assert m.geomean_speedup(a) == pytest.approx(1.1)


def test_an_untrusted_timing_is_not_fast_rather_than_unmeasured():
    untrusted = record("p", 0, 0, "ok")
    untrusted.result["findings"] = [{"check": "timing_untrusted", "message": "no speedup"}]
    a = attempts(untrusted, record("p", 1, 0, "ok", speedup=1.1))
    assert m.fast_p(a, 1.0) == pytest.approx(1 / 2)  # decided: not fast (a CPU run's None is undecidable)
    assert m.geomean_speedup(a) == pytest.approx(1.1)


def test_fast_p_at_k():
    a = attempts(
        record("p", 0, 0, "ok", speedup=1.2),
        record("p", 1, 0, "ok", speedup=0.9),
        record("p", 2, 0, "mismatch"),
        record("q", 0, 0, "ok", speedup=1.0),
        record("q", 1, 0, "ok", speedup=3.0),
        record("q", 2, 0, "ok", speedup=1.0),
    )
    # kernelbench p=1: p has c=1 of 3, q c=1 of 3; k=2: 1 - C(2,2)/C(3,2) = 2/3
    assert m.fast_p_at_k(a, 1.0, 2, "kernelbench") == pytest.approx(2 / 3)
    # drkernel p=1: p c=1, q c=3
    assert m.fast_p_at_k(a, 1.0, 2, "drkernel") == pytest.approx((2 / 3 + 1) / 2)
    assert m.fast_p_at_k(a, 1.0, 1, "kernelbench") == pytest.approx(1 / 3)


def test_geomean_speedup_and_coverage_distribution():
    a = attempts(
        record("p", 0, 0, "ok", speedup=2.0, coverage=0.95),
        record("p", 1, 0, "ok", speedup=0.5, coverage=0.35),
        record("p", 2, 0, "ok", speedup=4.0, coverage=1.0),
        record("p", 3, 0, "mismatch", coverage=0.05),  # not correct: not counted
    )
    assert m.geomean_speedup(a) == pytest.approx(math.exp((math.log(2) + math.log(0.5) + math.log(4)) / 3))
    dist = m.coverage_distribution(a)
    assert dist["count"] == 3
    assert dist["mean"] == pytest.approx(2.3 / 3)
    assert dist["quantiles"]["0.5"] == pytest.approx(0.95)
    assert dist["quantiles"]["0.25"] == pytest.approx(0.65)
    assert dist["quantiles"]["0"] == pytest.approx(0.35)
    assert dist["histogram"]["counts"] == [0, 0, 0, 1, 0, 0, 0, 0, 0, 2]
    assert m.coverage_distribution(attempts(record("p", 0, 0, "ok"))) is None
    assert m.geomean_speedup(attempts(record("p", 0, 0, "ok"))) is None


def test_best_prefers_correct_then_speedup_then_compiled_then_earliest():
    a = attempts(
        record("p", 0, 0, "compile_error"),
        record("p", 0, 1, "mismatch"),
        record("p", 0, 2, "ok", speedup=1.1),
        record("p", 0, 3, "ok", speedup=1.4),
        record("p", 0, 4, "ok", speedup=1.4),
        record("p", 0, 5, "infrastructure_error"),
    )
    assert m.best(a).turn == 3
    assert m.best(a[:2]).turn == 1  # compiled beats not compiled
    assert m.best(attempts(record("p", 0, 0, "ok"), record("p", 0, 1, "ok"))).turn == 0
    assert m.best(a[5:]) is None
    flagged = attempts(record("p", 0, 0, "ok", speedup=9.0, flagged=True), record("p", 0, 1, "ok", speedup=1.2))
    assert m.best(flagged).turn == 1


def test_per_turn_and_best_by_turn_curves():
    records = [
        # episode p/0: fails, then correct at turn 1, then a regression at turn 2
        record("p", 0, 0, "compile_error"),
        record("p", 0, 1, "ok", speedup=1.3),
        record("p", 0, 2, "mismatch"),
        # episode p/1: correct and slow at once, faster at turn 2
        record("p", 1, 0, "ok", speedup=0.8),
        record("p", 1, 1, "ok", speedup=0.9),
        record("p", 1, 2, "ok", speedup=2.5),
        # episode q/0: stops after one turn (no later records), infra at turn 0 in q/1 then nothing
        record("q", 0, 0, "ok", speedup=1.0),
        record("q", 1, 0, "infrastructure_error"),
        record("q", 1, 1, "hack_side_stream"),
    ]
    summary = m.summarize(records)
    per_turn = summary["per_turn"]
    assert summary["turns"] == 3
    assert [b["attempts"] for b in per_turn] == [3, 3, 2]
    assert [b["correct_rate"] for b in per_turn] == pytest.approx([2 / 3, 2 / 3, 1 / 2])
    assert per_turn[0]["infrastructure_excluded"] == 1
    best = summary["best_by_turn"]
    # turn 0: p/0 compile_error, p/1 ok 0.8, q/0 ok 1.0; q/1 only infra so far: excluded
    assert best[0]["attempts"] == 3
    assert best[0]["infrastructure_excluded"] == 1
    assert best[0]["correct_rate"] == pytest.approx(2 / 3)
    assert best[0]["fast_p"]["kernelbench"]["1"] == 0.0
    assert best[0]["fast_p"]["drkernel"]["1"] == pytest.approx(1 / 3)
    # turn 1: p/0 ok 1.3, p/1 ok 0.9, q/0 ok 1.0 (carried), q/1 hack
    assert best[1]["attempts"] == 4
    assert best[1]["correct_rate"] == pytest.approx(3 / 4)
    assert best[1]["fast_p"]["kernelbench"]["1"] == pytest.approx(1 / 4)
    # turn 2: p/0 keeps its turn-1 ok 1.3 despite the regression, p/1 ok 2.5
    assert best[2]["fast_p"]["kernelbench"]["2"] == pytest.approx(1 / 4)
    assert best[2]["geomean_speedup"] == pytest.approx((1.3 * 2.5 * 1.0) ** (1 / 3))
    assert summary["best"] == best[2]
    assert summary["first_turn"] == per_turn[0]
    assert summary["verdicts"]["ok"] == 5
    assert summary["episodes"] == 4


def test_best_by_iteration_takes_the_best_over_all_earlier_iterations():
    records = [
        record("p", 0, 0, "mismatch", iteration=0),
        record("p", 0, 1, "ok", speedup=1.5, iteration=0),
        record("p", 0, 2, "mismatch", iteration=1),
        record("p", 0, 3, "ok", speedup=1.2, iteration=1),
        record("p", 1, 0, "mismatch", iteration=0),
        record("p", 1, 1, "mismatch", iteration=0),
        record("p", 1, 2, "ok", speedup=2.0, iteration=1),
        record("p", 1, 3, "timeout", iteration=1),
    ]
    summary = m.summarize(records)
    by_iteration = summary["best_by_iteration"]
    assert summary["iterations"] == 2
    assert by_iteration[0]["correct_rate"] == pytest.approx(1 / 2)
    assert by_iteration[1]["correct_rate"] == 1.0
    assert by_iteration[1]["geomean_speedup"] == pytest.approx(math.sqrt(1.5 * 2.0))
    assert summary["best"]["pass_at_k"] == {"1": 1.0, "2": 1.0}


def test_block_reports_k_up_to_the_samples_and_summarize_needs_records():
    a = attempts(*[record("p", s, 0, "ok" if s < 3 else "mismatch") for s in range(12)])
    b = m.block(a)
    assert list(b["pass_at_k"]) == ["1", "2", "5", "10", "12"]
    assert b["pass_at_k"]["12"] == 1.0
    assert b["pass_at_k"]["10"] == pytest.approx(closed_form(12, 3, 10))
    with pytest.raises(ValueError, match="no trajectory records"):
        m.summarize([])


def test_a_turn_recorded_twice_counts_once_as_its_last_record():
    summary = m.summarize([record("p", 0, 0, "infrastructure_error"), record("p", 0, 0, "ok"), record("p", 1, 0, "ok")])
    assert summary["records"] == 2
    assert summary["first_turn"]["correct_rate"] == 1.0
    assert summary["verdicts"] == {"ok": 2}
