"""Task plug-ins: what a run trains on and with, when the config's sections cannot say it.

``task.name = "module:attr"`` names a callable ``f(config, **task.options) -> TaskParts``. The
trainer builds every part the callable leaves at None the default way (problems from ``data``, the
model from ``model``, the ``hf`` rollout engine over the chat template, a local environment), and
uses the others as they are; the loop, rewards, advantages, filters, loss, metrics and checkpoints
are the same for every task. The design-language experiment (docs/learning.md) is one:
``tritongym.design.task:build``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from tritongym.agent.episodes import EpisodeConfig
from tritongym.env.base import Env
from tritongym.errors import ConfigError
from tritongym.problems import Problem


@dataclass
class TaskParts:
    """The parts a task provides (None: the trainer builds the default one)."""

    problems: list[Problem] | None = None
    """Training problems (default: ``data.problems``)."""
    eval_problems: list[Problem] | None = None
    """Held-out problems of the periodic evaluation (default: ``data.eval_problems``)."""
    model: Any = None
    """The trained model: a torch module whose forward takes ``input_ids``/``attention_mask`` and
    returns ``.logits``, with ``save_pretrained`` (default: ``model``'s)."""
    tokenizer: Any = None
    """Its tokenizer (``pad_token_id``, ``save_pretrained``)."""
    engine: Any = None
    """The rollout engine (tritongym.train.rollout.RolloutEngine) sampling with ``model``."""
    env: Env | None = None
    """The environment that judges the answers (default: a local pool); the task closes nothing, the
    trainer closes an env it got from a task."""
    episode: EpisodeConfig | None = None
    """Prompts, extraction and feedback of the episodes (default: the ``rollout`` section's)."""


def load_task(config: Any) -> TaskParts:
    """The parts of ``config.task`` (empty parts for the default task)."""
    name = config.task.name
    if not name:
        return TaskParts()
    module_name, sep, attr = name.partition(":")
    if not sep:
        raise ConfigError(f"task.name must be 'module:attr', not {name!r}")
    try:
        builder = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"task {name!r} cannot be imported: {exc}") from exc
    parts = builder(config, **config.task.options)
    if not isinstance(parts, TaskParts):
        raise ConfigError(f"task {name!r} returned {type(parts).__name__}, not TaskParts")
    if parts.model is not None and parts.tokenizer is None:
        raise ConfigError(f"task {name!r} returned a model without its tokenizer")
    return parts
