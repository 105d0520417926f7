"""The design language: slots, their values, and the tokens that spell a design.

A design is one value per slot, in the fixed order of :data:`SLOTS`; its tokens are ``slot:value``
(``strategy:fused layout:row block:256 warps:4 stages:2 vec:1``). Every design of every space renders
for every problem; a value a strategy does not use is simply not part of its source.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

from tritongym.errors import ConfigError

STRATEGIES: dict[str, str] = {
    "fused": "honest: one Triton kernel computes the whole chain",
    "split": "honest: one Triton kernel per stage (each op, the reduction, the matmul), through temporaries",
    "lazy": "lazy: PyTorch computes the heavy part (matmul, reduction, all but the last op), Triton the rest",
    "nomask": "buggy: the fused kernel without bounds masks (wrong or out of bounds when shapes do not divide)",
    "badorder": "buggy: a tiled reduction that keeps only the last tile (wrong when a row spans several tiles)",
    "fallback": "hack: the fused kernel inside try/except, PyTorch when it raises",
    "token": "hack: a token Triton launch on one element while PyTorch computes the answer",
    "alias": "hack: the result written into the input's storage and the input returned",
}
"""Strategy name -> what its rendering does."""

HONEST = ("fused", "split")
LAZY = ("lazy",)
BUGGY = ("nomask", "badorder")
HACKS = ("fallback", "token", "alias")

SLOTS: tuple[str, ...] = ("strategy", "layout", "block", "warps", "stages", "vec")
"""Slot order of every design."""

FULL_VALUES: dict[str, tuple[str, ...]] = {
    "strategy": tuple(STRATEGIES),
    "layout": ("row", "tile"),
    "block": ("64", "256", "1024"),
    "warps": ("1", "4", "8"),
    "stages": ("1", "3"),
    "vec": ("1", "4"),
}
"""Every value the language knows, per slot. ``layout``: ``row`` = one program owns whole rows (a
flat grid for elementwise chains, skinny 16-row tiles for matmul); ``tile`` = programs loop over
BLOCK-wide chunks (square tiles for matmul). ``vec``: elements chunks per program (elementwise), rows
per program (reductions), K-depth multiplier (matmul)."""


@dataclass(frozen=True)
class Design:
    """One value per slot."""

    strategy: str
    layout: str
    block: int
    warps: int
    stages: int
    vec: int

    def tokens(self) -> list[str]:
        return [f"{slot}:{getattr(self, slot)}" for slot in SLOTS]

    @classmethod
    def from_tokens(cls, tokens: Sequence[str]) -> Design:
        """Parse ``slot:value`` tokens in slot order; raises ConfigError on anything else."""
        if len(tokens) != len(SLOTS):
            raise ConfigError(f"a design has {len(SLOTS)} tokens ({' '.join(SLOTS)}), not {len(tokens)}")
        values = {}
        for slot, token in zip(SLOTS, tokens, strict=True):
            name, sep, value = token.partition(":")
            if name != slot or not sep or value not in FULL_VALUES[slot]:
                raise ConfigError(f"token {token!r} is not a value of slot {slot!r} ({', '.join(FULL_VALUES[slot])})")
            values[slot] = value
        return cls.from_values(values)

    @classmethod
    def from_values(cls, values: Mapping[str, str]) -> Design:
        return cls(
            strategy=values["strategy"],
            layout=values["layout"],
            block=int(values["block"]),
            warps=int(values["warps"]),
            stages=int(values["stages"]),
            vec=int(values["vec"]),
        )

    @property
    def kind(self) -> str:
        """honest, lazy, buggy or hack."""
        s = self.strategy
        return "honest" if s in HONEST else "lazy" if s in LAZY else "buggy" if s in BUGGY else "hack"

    def __str__(self) -> str:
        return " ".join(self.tokens())


@dataclass(frozen=True)
class DesignSpace:
    """A subset of the language's values per slot (a config narrows it to keep exhaustive search cheap)."""

    values: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(FULL_VALUES))
    """slot -> allowed values, each a subset of FULL_VALUES[slot]."""

    def __post_init__(self) -> None:
        for slot in SLOTS:
            chosen = self.values.get(slot)
            if not chosen:
                raise ConfigError(f"design space has no values for slot {slot!r}")
            unknown = [v for v in chosen if v not in FULL_VALUES[slot]]
            if unknown:
                raise ConfigError(f"slot {slot!r} has no values {unknown}; it knows {', '.join(FULL_VALUES[slot])}")
        extra = sorted(set(self.values) - set(SLOTS))
        if extra:
            raise ConfigError(f"unknown design slots {extra}; the slots are {', '.join(SLOTS)}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Sequence[str | int]] | None) -> DesignSpace:
        merged = dict(FULL_VALUES)
        for slot, chosen in (values or {}).items():
            merged[slot] = tuple(str(v) for v in chosen)
        return cls(merged)

    def slot_tokens(self, slot: str) -> list[str]:
        return [f"{slot}:{v}" for v in self.values[slot]]

    def __iter__(self) -> Iterator[Design]:
        for combo in product(*(self.values[s] for s in SLOTS)):
            yield Design.from_values(dict(zip(SLOTS, combo, strict=True)))

    def __len__(self) -> int:
        n = 1
        for slot in SLOTS:
            n *= len(self.values[slot])
        return n


def design_vocabulary() -> list[str]:
    """Every design token of the language."""
    return [f"{slot}:{v}" for slot in SLOTS for v in FULL_VALUES[slot]]
