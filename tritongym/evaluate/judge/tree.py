"""One walker for the nested values that forward takes and returns: tensors and Python scalars in
lists, tuples and dicts (string keys), to any depth."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def leaves(value: Any, path: str = "output") -> list[tuple[str, Any]]:
    """(path, leaf) for every non-container value, in order: ``output[0]``, ``output['key']``.
    A dict's entries come in the order of their keys, so two dicts with the same keys line up."""
    if isinstance(value, (list, tuple)):
        return [leaf for i, item in enumerate(value) for leaf in leaves(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        ordered = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return [leaf for key, item in ordered for leaf in leaves(item, f"{path}[{key!r}]")]
    return [(path, value)]


def tensor_leaves(value: Any) -> list[torch.Tensor]:
    """The tensors in a nested value, in order."""
    return [leaf for _, leaf in leaves(value) if isinstance(leaf, torch.Tensor)]


def map_tensors(value: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """The same structure with ``fn`` applied to every tensor."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def clone(value: Any) -> Any:
    return map_tensors(value, torch.clone)


def detach(value: Any) -> Any:
    return map_tensors(value, lambda t: t.detach())
