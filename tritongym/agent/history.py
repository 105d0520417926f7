"""History modes: which earlier exchanges of an episode the policy sees in its next turn.

An exchange is one answer of the model and the feedback message that followed it. Every turn's
context is the first turn's messages plus a window of exchanges:

- ``all``: every earlier exchange;
- ``last:K``: the last K exchanges;
- ``best:K``: the K consecutive exchanges with the highest summed reward (the STTS context reset);
  ties go to the latest window, a reward of None counts as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tritongym.errors import ConfigError
from tritongym.policy.base import Message


@dataclass(frozen=True)
class Exchange:
    """One answer and the feedback on it."""

    answer: Message
    """The assistant message (the prefill, if any, followed by the completion)."""
    feedback: Message
    """The user message carrying the rendered evaluation."""
    reward: float | None
    turn: int


@dataclass(frozen=True)
class History:
    """A parsed history mode."""

    mode: Literal["all", "last", "best"] = "all"
    k: int = 0
    """Window length of ``last`` and ``best`` (unused by ``all``)."""

    @classmethod
    def parse(cls, spec: str) -> History:
        """``all``, ``last:K`` or ``best:K`` (K >= 1)."""
        mode, _, k = spec.strip().partition(":")
        if mode == "all" and not k:
            return cls("all")
        if mode in ("last", "best"):
            try:
                value = int(k)
            except ValueError:
                value = 0
            if value >= 1:
                return cls(mode, value)
        raise ConfigError(f"history must be 'all', 'last:K' or 'best:K' with K >= 1, not {spec!r}")

    def __str__(self) -> str:
        return self.mode if self.mode == "all" else f"{self.mode}:{self.k}"

    def window(self, exchanges: Sequence[Exchange]) -> list[Exchange]:
        """The exchanges this mode keeps, in their original order."""
        if self.mode == "all":
            return list(exchanges)
        if self.mode == "last":
            return list(exchanges[-self.k :])
        start = best_window_start([e.reward for e in exchanges], self.k)
        return list(exchanges[start : start + self.k])


def best_window_start(rewards: Sequence[float | None], k: int) -> int:
    """Start of the K consecutive rewards with the highest sum (the latest on ties; 0 if fewer than K)."""
    if len(rewards) <= k:
        return 0
    values = [0.0 if r is None else float(r) for r in rewards]
    best_start, best_sum = 0, sum(values[:k])
    for start in range(1, len(values) - k + 1):
        total = sum(values[start : start + k])
        if total >= best_sum:
            best_start, best_sum = start, total
    return best_start
