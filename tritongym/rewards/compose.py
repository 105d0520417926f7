"""Weighted sums of rewards. A None (infrastructure error) in any part makes the total None."""

from __future__ import annotations

from collections.abc import Sequence


def weighted_sum(values: Sequence[float | None], weights: Sequence[float]) -> float | None:
    if len(values) != len(weights):
        raise ValueError(f"{len(values)} rewards but {len(weights)} weights")
    if any(v is None for v in values):
        return None
    return sum(w * v for v, w in zip(values, weights, strict=True))
