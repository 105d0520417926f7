"""The Policy protocol: batched chat generation, the one API of every text-generation backend.

A backend (an OpenAI-compatible server, a local transformers model, a scripted replay) takes a batch
of conversations and returns ``n`` completions for each. Local backends also return the token ids and
the behaviour log-probabilities the trainer needs (``Completion.token_ids`` / ``Completion.logprobs``);
remote ones leave them empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""


@dataclass(frozen=True)
class SamplingConfig:
    """How to sample completions."""

    n: int = 1
    """Completions per conversation."""
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 4096
    """Most new tokens per completion."""
    stop: tuple[str, ...] = ()
    """Strings that end a completion (not included in its text)."""
    seed: int | None = None
    """Sampling seed where the backend supports one."""


@dataclass
class Completion:
    """One sampled answer to one conversation."""

    text: str
    finish_reason: str = "stop"
    """``stop`` (end of answer or a stop string), ``length`` (max_tokens reached) or ``error``."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_token_ids: list[int] = field(default_factory=list)
    """The tokenized conversation the completion continues (local backends only)."""
    token_ids: list[int] = field(default_factory=list)
    """The completion's tokens (local backends only)."""
    logprobs: list[float] = field(default_factory=list)
    """Behaviour log-probability of each token of ``token_ids`` under the sampling distribution."""
    error: str = ""
    """Why generation failed (``finish_reason == "error"``): not the model's answer, never a reward."""


@runtime_checkable
class Policy(Protocol):
    """Batched chat generation."""

    name: str
    """The model's name, as recorded in trajectories and reports."""

    def generate(self, conversations: list[list[Message]], sampling: SamplingConfig) -> list[list[Completion]]:
        """``sampling.n`` completions for each conversation, in input order. A conversation whose last
        message is from the assistant is a prefill: the completion continues it."""
        ...
