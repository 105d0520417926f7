"""Registries of algorithms by name, so configs and CLIs can choose them with a string."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tritongym.errors import ConfigError

F = TypeVar("F", bound=Callable)


class Registry:
    """A name -> function table with a decorator to fill it."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Callable] = {}

    def register(self, name: str) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            if name in self._items:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._items[name] = fn
            return fn

        return decorate

    def get(self, name: str) -> Callable:
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(sorted(self._items))}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._items)


ADVANTAGES = Registry("advantage estimator")
AGGREGATIONS = Registry("loss aggregation")

register_advantage = ADVANTAGES.register
register_aggregation = AGGREGATIONS.register
