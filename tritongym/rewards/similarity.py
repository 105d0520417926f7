"""The text similarity of a program to a known solution, at a bounded cost.

The value is difflib's: ``difflib.SequenceMatcher(None, program, solution, autojunk=False).ratio()``,
``2 M / (len(program) + len(solution))`` with ``M`` the characters of the matching blocks that
``get_matching_blocks`` finds (the longest common block, then recursively the longest on each side
of it). Autojunk stays off: with it on, characters frequent in the solution (spaces, ``e``) are never
matched, which makes any two programs alike.

difflib's cost is not bounded by the lengths alone: each search for a longest block visits, for every
character of the program's range, every occurrence of that character in the solution, and a
degenerate program (one character repeated, red team 9's open item) is searched again for each of the
many short blocks it yields. ``"t" * 32000`` against a 2,262-character solution took about 160 million
such visits (19 s on one CPU core), while a program three times a bundled solution's length needs
under 2 million. So the matching here is difflib's own algorithm, made to count its visits: within
``WORK_LIMIT`` the value is difflib's exactly (the tests compare the two); past it the search stops
and the value is ``2 L / (len(program) + len(solution))``, ``L`` the length of the longest common
substring, found in linear time with a suffix automaton of the solution. ``L`` is the first block
difflib finds, so ``L <= M``: the fallback is never above difflib's value, and a program gains
nothing by being costly to compare.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

WORK_LIMIT = 10_000_000
"""The most character visits the block search makes (about a second of CPython): past it the value
is the longest-common-substring bound. Every pairing of the bundled problems' programs (a solution
with another's reference, a solution three times over) needs under 2 million."""


@dataclass(frozen=True)
class Similarity:
    ratio: float
    """The similarity, in [0, 1]."""
    exact: bool
    """Whether ``ratio`` is difflib's value (the search finished within the limit), not the bound."""
    work: int
    """Character visits the block search made (at most ``WORK_LIMIT`` plus one solution's length)."""


class _OverBudget(Exception):
    def __init__(self, work: int):
        super().__init__(work)
        self.work = work


@functools.lru_cache(maxsize=64)
def _positions(solution: str) -> dict[str, list[int]]:
    """Where each character occurs in the solution, in order (difflib's ``b2j`` without junk)."""
    found: dict[str, list[int]] = {}
    for j, c in enumerate(solution):
        found.setdefault(c, []).append(j)
    return found


def _matched(program: str, solution: str, limit: int) -> tuple[int, int]:
    """(characters of difflib's matching blocks, visits made); raises ``_OverBudget`` past ``limit``."""
    where = _positions(solution)
    work = matched = 0
    pending = [(0, len(program), 0, len(solution))]
    while pending:
        alo, ahi, blo, bhi = pending.pop()
        # the longest block a[i:i+k] == b[j:j+k] in the ranges, the earliest i, then the earliest j
        best_i, best_j, best_k = alo, blo, 0
        ending: dict[int, int] = {}
        for i in range(alo, ahi):
            here: dict[int, int] = {}
            js = where.get(program[i])
            if js:  # only the occurrences in [blo, bhi): a slice to the end would copy uncounted ones
                for j in js[bisect.bisect_left(js, blo) : bisect.bisect_left(js, bhi)]:
                    k = here[j] = ending.get(j - 1, 0) + 1
                    if k > best_k:
                        best_i, best_j, best_k = i - k + 1, j - k + 1, k
                work += len(here)
            work += 1
            if work > limit:
                raise _OverBudget(work)
            ending = here
        if best_k:
            matched += best_k
            if alo < best_i and blo < best_j:
                pending.append((alo, best_i, blo, best_j))
            if best_i + best_k < ahi and best_j + best_k < bhi:
                pending.append((best_i + best_k, ahi, best_j + best_k, bhi))
    return matched, work


@functools.lru_cache(maxsize=64)
def _automaton(solution: str) -> tuple[list[dict[str, int]], list[int], list[int]]:
    """The suffix automaton of the solution: (transitions, suffix links, lengths) per state."""
    moves: list[dict[str, int]] = [{}]
    link, length = [-1], [0]
    last = 0
    for c in solution:
        state = len(length)
        moves.append({})
        link.append(0)
        length.append(length[last] + 1)
        p = last
        while p != -1 and c not in moves[p]:
            moves[p][c] = state
            p = link[p]
        if p != -1:
            q = moves[p][c]
            if length[p] + 1 == length[q]:
                link[state] = q
            else:
                clone = len(length)
                moves.append(dict(moves[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                while p != -1 and moves[p].get(c) == q:
                    moves[p][c] = clone
                    p = link[p]
                link[q] = link[state] = clone
        last = state
    return moves, link, length


def longest_common_substring(program: str, solution: str) -> int:
    """The length of the longest string that both contain, in O(len(program) + len(solution))."""
    moves, link, length = _automaton(solution)
    best = state = size = 0
    for c in program:
        while state and c not in moves[state]:
            state = link[state]
            size = length[state]
        if c in moves[state]:
            state = moves[state][c]
            size += 1
            best = max(best, size)
        else:
            state = size = 0
    return best


def similarity(program: str, solution: str, limit: int = WORK_LIMIT) -> Similarity:
    """difflib's ratio (autojunk off) of ``program`` to ``solution`` where its search makes at most
    ``limit`` visits, else the longest-common-substring bound, which is never above it."""
    total = len(program) + len(solution)
    if not total:
        return Similarity(1.0, True, 0)
    try:
        matched, work = _matched(program, solution, limit)
    except _OverBudget as over:
        return Similarity(2.0 * longest_common_substring(program, solution) / total, False, over.work)
    return Similarity(2.0 * matched / total, True, work)
