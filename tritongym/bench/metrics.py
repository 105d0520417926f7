"""Benchmark metrics over trajectory records: pure functions, each defined in docs/bench.md.

The unit of every rate is an *attempt*: one evaluated answer (or an answer with no code) of one
episode. A view picks one attempt per episode (its first turn, turn t, or its best so far) and the
metrics are computed over the attempts of that view. Infrastructure errors are never the model's
doing: they are counted and reported but excluded from every denominator.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tritongym.agent.records import NO_CODE, TurnRecord
from tritongym.evaluate.result import Category
from tritongym.rewards.outcome import IMPLAUSIBLE_SPEEDUP, TIMING_UNTRUSTED, lazy
from tritongym.rewards.outcome import category as outcome_category

P_VALUES: tuple[float, ...] = (0.0, 1.0, 1.2, 1.5, 2.0, 3.0)
"""Speedup thresholds of fast_p (KernelBench reports fast_0, fast_1, fast_2; Dr.Kernel adds 1.2)."""
K_VALUES: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100)
"""Candidate k of pass@k; only those no larger than the most samples of a problem are reported."""

Convention = Literal["kernelbench", "drkernel"]
CONVENTIONS: tuple[Convention, ...] = ("kernelbench", "drkernel")
"""``kernelbench``: correct and speedup > p; ``drkernel``: correct and speedup >= p."""


# Categories of an attempt's outcome: ``Verdict.category`` (docs/bench.md, "Categories").
OK, FAILED, INCORRECT = Category.OK.value, Category.FAILED.value, Category.INCORRECT.value
HACK, INFRASTRUCTURE = Category.HACK.value, Category.INFRASTRUCTURE.value
CATEGORIES: tuple[str, ...] = (OK, INCORRECT, FAILED, HACK, INFRASTRUCTURE)
"""Every category, in the order of ``category_counts``."""


def verdict_category(verdict: str) -> str:
    """The category of a verdict: ``Verdict.category``; ``no_code`` is ``failed``
    (``tritongym.rewards.outcome.category``, the classification every reward uses)."""
    return outcome_category({"verdict": verdict}).value


@dataclass(frozen=True)
class Attempt:
    """What the metrics need of one turn record."""

    problem: str
    sample: int
    turn: int
    iteration: int
    verdict: str
    speedup: float | None = None
    """The measured speedup; None where not timed (CPU) or not correct."""
    speedup_flagged: bool = False
    """The evaluator flagged the speedup as physically implausible, or timed the candidate but could not
    trust the timing (no speedup), or the result is lazy (``outcome.lazy``: its speedup is PyTorch's or
    the host's, not its kernels'; red team 23 #8): it never counts as fast, and a correct attempt with
    it is decided (not fast), not unmeasured."""
    coverage: float | None = None
    compiled: bool = False
    """``EvalResult.compiled``: the candidate loaded and its kernels ran (no_code never compiled)."""

    @property
    def category(self) -> str:
        return verdict_category(self.verdict)

    @property
    def correct(self) -> bool:
        return self.category == OK

    @property
    def no_code(self) -> bool:
        return self.verdict == NO_CODE

    @property
    def infrastructure(self) -> bool:
        return self.category == INFRASTRUCTURE

    @property
    def episode(self) -> tuple[str, int]:
        return (self.problem, self.sample)


def attempt(record: TurnRecord) -> Attempt:
    """The metric-relevant facts of one record."""
    result = record.result or {}
    findings = result.get("findings") or []
    flagged = lazy(result) or any(
        isinstance(f, Mapping) and f.get("check") in (IMPLAUSIBLE_SPEEDUP, TIMING_UNTRUSTED) for f in findings
    )
    return Attempt(
        problem=record.problem,
        sample=record.sample,
        turn=record.turn,
        iteration=record.iteration,
        verdict=record.verdict,
        speedup=result.get("speedup"),
        speedup_flagged=flagged,
        coverage=result.get("coverage"),
        compiled=bool(result.get("compiled")),
    )


def scored(attempts: Iterable[Attempt]) -> list[Attempt]:
    """The attempts that count: everything but infrastructure errors."""
    return [a for a in attempts if not a.infrastructure]


def _rate(attempts: Sequence[Attempt], predicate: Callable[[Attempt], bool]) -> float | None:
    counted = scored(attempts)
    return sum(map(predicate, counted)) / len(counted) if counted else None


def compile_rate(attempts: Sequence[Attempt]) -> float | None:
    """Share of scored attempts whose evaluation says the candidate loaded and its kernels ran
    (``EvalResult.compiled``)."""
    return _rate(attempts, lambda a: a.compiled)


def correct_rate(attempts: Sequence[Attempt]) -> float | None:
    """Share of scored attempts with verdict ``ok``."""
    return _rate(attempts, lambda a: a.correct)


def category_rate(attempts: Sequence[Attempt], category: str) -> float | None:
    """Share of scored attempts in one verdict category (``hack``, ``failed`` ...)."""
    return _rate(attempts, lambda a: a.category == category)


def no_code_rate(attempts: Sequence[Attempt]) -> float | None:
    """Share of scored attempts with no extractable solution (verdict ``no_code``, category ``failed``)."""
    return _rate(attempts, lambda a: a.no_code)


def verdict_counts(attempts: Iterable[Attempt]) -> dict[str, int]:
    """How many attempts got each verdict (infrastructure errors and no_code included), most first."""
    counts: dict[str, int] = defaultdict(int)
    for a in attempts:
        counts[a.verdict] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def category_counts(attempts: Iterable[Attempt]) -> dict[str, int]:
    """How many attempts fell in each category (every category present, zeros included)."""
    counts = dict.fromkeys(CATEGORIES, 0)
    for a in attempts:
        counts[a.category] += 1
    return counts


def is_fast(a: Attempt, p: float, convention: Convention) -> bool | None:
    """Whether an attempt counts for fast_p: correct and speedup > p (kernelbench) or >= p (drkernel).

    None when it is correct but its speedup was not measured (and p > 0): undecidable.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown fast_p convention {convention!r} (expected one of {CONVENTIONS})")
    if not a.correct:
        return False
    if p == 0:
        return True
    if a.speedup_flagged:
        return False
    if a.speedup is None:
        return None
    return a.speedup > p if convention == "kernelbench" else a.speedup >= p


def fast_p(attempts: Sequence[Attempt], p: float, convention: Convention = "kernelbench") -> float | None:
    """Share of scored attempts that are correct and faster than p times the reference.

    fast_0 is the correct rate. For p > 0 the result is None ("not measured") when any correct
    attempt has no measured speedup (CPU runs), never a silent 0.
    """
    counted = scored(attempts)
    if not counted:
        return None
    flags = [is_fast(a, p, convention) for a in counted]
    if any(f is None for f in flags):
        return None
    return sum(flags) / len(counted)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased pass@k estimator of one problem (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    n samples, c of them passing. Computed as the stable product 1 - prod_{i=n-c+1}^{n} (1 - k/i).
    None when n < k (k samples cannot be drawn from n).
    """
    if k < 1 or c < 0 or c > n:
        raise ValueError(f"pass_at_k needs k >= 1 and 0 <= c <= n (got n={n}, c={c}, k={k})")
    if n < k:
        return None
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def _by_problem(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    groups: dict[str, list[Attempt]] = defaultdict(list)
    for a in scored(attempts):
        groups[a.problem].append(a)
    return groups


def mean_pass_at_k(
    attempts: Sequence[Attempt], k: int, passed: Callable[[Attempt], bool | None] | None = None
) -> float | None:
    """pass@k per problem (n = its scored attempts, c = those passing), averaged over problems.

    Problems with fewer than k scored attempts are left out; None when none is left, or when
    ``passed`` is undecidable (None) for some attempt.
    """
    passed = passed or (lambda a: a.correct)
    values = []
    for group in _by_problem(attempts).values():
        flags = [passed(a) for a in group]
        if any(f is None for f in flags):
            return None
        value = pass_at_k(len(group), sum(flags), k)
        if value is not None:
            values.append(value)
    return sum(values) / len(values) if values else None


def fast_p_at_k(attempts: Sequence[Attempt], p: float, k: int, convention: Convention = "kernelbench") -> float | None:
    """pass@k with "correct and speedup over p" as the passing test (fast_p@k)."""
    return mean_pass_at_k(attempts, k, lambda a: is_fast(a, p, convention))


def geomean_speedup(attempts: Iterable[Attempt]) -> float | None:
    """Geometric mean of the measured, trusted speedups of correct attempts; None when there are none."""
    logs = [math.log(a.speedup) for a in attempts if a.correct and a.speedup and not a.speedup_flagged]
    return math.exp(sum(logs) / len(logs)) if logs else None


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted-or-not values (numpy's default method)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


COVERAGE_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
COVERAGE_BINS = 10


def coverage_distribution(attempts: Iterable[Attempt]) -> dict[str, Any] | None:
    """Coverage of correct attempts: count, mean, quantiles and a histogram of 10 equal bins on [0, 1].

    None when no correct attempt has a coverage (CPU runs are not profiled).
    """
    values = [float(a.coverage) for a in attempts if a.correct and a.coverage is not None]
    if not values:
        return None
    histogram = [0] * COVERAGE_BINS
    for v in values:
        histogram[min(max(int(v * COVERAGE_BINS), 0), COVERAGE_BINS - 1)] += 1
    return {
        "count": len(values),
        "mean": sum(values) / len(values),
        "quantiles": {f"{q:g}": quantile(values, q) for q in COVERAGE_QUANTILES},
        "histogram": {"edges": [i / COVERAGE_BINS for i in range(COVERAGE_BINS + 1)], "counts": histogram},
    }


# Views: one attempt per episode.


def episodes(attempts: Iterable[Attempt]) -> dict[tuple[str, int], list[Attempt]]:
    """Attempts grouped by episode (problem, sample), each in turn order."""
    groups: dict[tuple[str, int], list[Attempt]] = defaultdict(list)
    for a in attempts:
        groups[a.episode].append(a)
    return {key: sorted(group, key=lambda a: a.turn) for key, group in sorted(groups.items())}


def rank(a: Attempt) -> tuple[bool, float, bool]:
    """The order of "best": correct first, then the highest trusted speedup, then compiled.

    An unmeasured or flagged speedup ranks below every measured one; ties go to the earlier turn.
    """
    speedup = a.speedup if a.correct and a.speedup is not None and not a.speedup_flagged else -math.inf
    return (a.correct, speedup, a.compiled)


def best(attempts: Iterable[Attempt]) -> Attempt | None:
    """The best scored attempt (``rank``; the earliest among equals), or None if none is scored."""
    chosen = None
    for a in sorted(scored(attempts), key=lambda a: a.turn):
        if chosen is None or rank(a) > rank(chosen):
            chosen = a
    return chosen


def at_turn(attempts: Iterable[Attempt], turn: int) -> list[Attempt]:
    """The attempts made at one turn (episodes that stopped earlier have none)."""
    return [a for a in attempts if a.turn == turn]


def best_within(attempts: Iterable[Attempt], keep: Callable[[Attempt], bool]) -> tuple[list[Attempt], int]:
    """Each episode's best attempt among those ``keep`` selects, and how many episodes had only
    infrastructure errors there (they are left out)."""
    chosen, excluded = [], 0
    for group in episodes(attempts).values():
        window = [a for a in group if keep(a)]
        if not window:
            continue
        top = best(window)
        if top is None:
            excluded += 1
        else:
            chosen.append(top)
    return chosen, excluded


def best_by_turn(attempts: Sequence[Attempt], turn: int) -> tuple[list[Attempt], int]:
    """Each episode's best attempt among its turns <= ``turn``."""
    return best_within(attempts, lambda a: a.turn <= turn)


def block(attempts: Sequence[Attempt], excluded_episodes: int = 0, ks: Sequence[int] = K_VALUES) -> dict[str, Any]:
    """Every metric of one set of attempts, as plain JSON-ready data."""
    counted = scored(attempts)
    per_problem = _by_problem(counted)
    max_n = max((len(g) for g in per_problem.values()), default=0)
    ks = [k for k in ks if k <= max_n]
    if max_n and max_n not in ks:
        ks.append(max_n)
    measured = [a for a in counted if a.correct and a.speedup is not None]
    return {
        "attempts": len(counted),
        "problems": len(per_problem),
        "infrastructure_excluded": len(attempts) - len(counted) + excluded_episodes,
        "compile_rate": compile_rate(attempts),
        "correct_rate": correct_rate(attempts),
        "hack_rate": category_rate(attempts, HACK),
        "no_code_rate": no_code_rate(attempts),
        "categories": category_counts(attempts),
        "verdicts": verdict_counts(attempts),
        "fast_p": {c: {f"{p:g}": fast_p(attempts, p, c) for p in P_VALUES} for c in CONVENTIONS},
        "pass_at_k": {str(k): mean_pass_at_k(attempts, k) for k in ks},
        "fast_p_at_k": {
            c: {f"{p:g}": {str(k): fast_p_at_k(attempts, p, k, c) for k in ks} for p in P_VALUES if p > 0}
            for c in CONVENTIONS
        },
        "speedups_measured": len(measured),
        "speedups_flagged": sum(a.speedup_flagged for a in measured),
        "geomean_speedup": geomean_speedup(attempts),
        "coverage": coverage_distribution(attempts),
    }


def summarize(records: Iterable[TurnRecord]) -> dict[str, Any]:
    """All metrics of a run: verdict counts of every record; the metric blocks of the first turn and
    of the best over all turns (and iterations); the per-turn, best-by-turn and best-by-iteration curves.
    A turn recorded twice (problem, sample, turn) counts once, as its last record."""
    latest = {(a.problem, a.sample, a.turn): a for a in map(attempt, records)}  # a resumed run's rewrite wins
    attempts = list(latest.values())
    if not attempts:
        raise ValueError("no trajectory records to summarize")
    turns = max(a.turn for a in attempts) + 1
    iterations = max(a.iteration for a in attempts) + 1
    first = at_turn(attempts, min(a.turn for a in attempts))
    overall, overall_excluded = best_within(attempts, lambda a: True)
    return {
        "records": len(attempts),
        "episodes": len(episodes(attempts)),
        "problems": len({a.problem for a in attempts}),
        "turns": turns,
        "iterations": iterations,
        "verdicts": verdict_counts(attempts),
        "categories": category_counts(attempts),
        "first_turn": block(first),
        "best": block(overall, overall_excluded),
        "per_turn": [block(at_turn(attempts, t)) for t in range(turns)],
        "best_by_turn": [block(*best_by_turn(attempts, t)) for t in range(turns)],
        "best_by_iteration": [
            block(*best_within(attempts, lambda a, i=i: a.iteration <= i)) for i in range(iterations)
        ],
    }
