"""The similarity reward's matching (tritongym/rewards/similarity.py): difflib's value within its work
limit, a lower bound of it past the limit, at a cost bounded by the limit."""

import difflib
import random

import pytest

from tritongym.problems import find_problem, load_bundled
from tritongym.rewards.similarity import WORK_LIMIT, longest_common_substring, similarity


def _difflib(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _pairs(count: int, alphabet: str, most: int):
    rng = random.Random(f"{alphabet}{most}")
    for _ in range(count):
        yield (
            "".join(rng.choice(alphabet) for _ in range(rng.randrange(most))),
            "".join(rng.choice(alphabet) for _ in range(rng.randrange(most))),
        )


@pytest.mark.parametrize(("alphabet", "most"), [("ab", 12), ("abc ", 40), ("a b\nc(d)", 120)])
def test_the_value_is_difflibs_on_random_text_where_ties_abound(alphabet, most):
    """Few distinct characters make many blocks of equal length: the earliest-block rule decides."""
    for a, b in _pairs(150, alphabet, most):
        got = similarity(a, b)
        assert got.exact and got.ratio == _difflib(a, b), (a, b)


def test_the_value_is_difflibs_on_the_bundled_programs():
    """Each problem's solution against its reference, another problem's solution, and itself repeated:
    exact, and far below the limit."""
    problems = load_bundled()[:6]
    for problem in problems:
        solution = problem.solution.strip()
        for program in (problem.source.strip(), problems[0].solution.strip(), (solution + "\n") * 2):
            got = similarity(program, solution)
            assert got.exact and got.ratio == _difflib(program, solution), problem.name
            assert got.work < WORK_LIMIT // 5, (problem.name, got.work)


def test_past_the_limit_the_value_is_the_longest_common_substring_bound_never_above_difflibs():
    """With a small limit the search stops; the value is 2 L / (n + m), L the longest common substring,
    which is the first block difflib finds: never more than its ratio."""
    for a, b in _pairs(100, "ab c", 80):
        got = similarity(a, b, limit=30)
        exact = _difflib(a, b)
        if got.exact:
            assert got.ratio == exact
        else:
            assert got.ratio == 2 * longest_common_substring(a, b) / (len(a) + len(b))
            assert got.ratio <= exact + 1e-12, (a, b)


def test_the_longest_common_substring_is_found():
    for a, b in _pairs(200, "abc", 30):
        brute = max((k for i in range(len(a)) for k in range(1, len(a) - i + 1) if a[i : i + k] in b), default=0)
        assert longest_common_substring(a, b) == brute, (a, b)


def test_a_degenerate_program_costs_at_most_the_limit():
    """Red team 9's stall: one repeated character against a solution rich in it. difflib made ~160
    million visits for `"t" * 32000`; the search here stops at its limit (work, not time, asserted),
    and the value stays tiny, as difflib's would be."""
    solution = find_problem("06_linear_relu").solution.strip()
    got = similarity("t" * 32000, solution, limit=200_000)
    assert not got.exact and 200_000 < got.work <= 200_000 + len(solution) + 1
    assert 0 < got.ratio <= 2 * solution.count("t") / (32000 + len(solution))
