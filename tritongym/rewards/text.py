"""Rewards of the model's text alone: answer format, and similarity to a known solution (difflib)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tritongym.rewards.similarity import similarity

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def code_blocks(text: str) -> list[str]:
    """The bodies of the fenced code blocks of ``text``, in order."""
    return [m.group(2) for m in _FENCE.finditer(text)]


def _code_fences(text: str) -> list[re.Match[str]]:
    """The fenced blocks of ``text`` that hold code: a fence whose body is blank is none (red team 23 #4:
    the format rewards paid an empty fence as the answer's code)."""
    return [m for m in _FENCE.finditer(text) if m.group(2).strip()]


def extract_code(text: str) -> str | None:
    """The last fenced code block (models often show a draft first), or None."""
    blocks = code_blocks(text)
    return blocks[-1] if blocks else None


@dataclass(frozen=True)
class FormatReward:
    """1.0 for a reasoning block followed by exactly one fenced code block; 0.5 for exactly one code
    block without a reasoning block before it; 0.0 otherwise. A fence with a blank body is no code block."""

    think_open: str = "<think>"
    think_close: str = "</think>"
    full: float = 1.0
    partial: float = 0.5

    def __call__(self, text: str) -> float:
        fences = _code_fences(text)
        if len(fences) != 1:
            return 0.0
        start = text.find(self.think_open)
        end = text.find(self.think_close, start + len(self.think_open)) if start >= 0 else -1
        reasoned = start >= 0 and end >= 0 and end + len(self.think_close) <= fences[0].start()
        if reasoned and text[start + len(self.think_open) : end].strip():
            return self.full
        return self.partial


def _ratio(code: str | None, solution: str) -> float:
    if code is None:
        return 0.0
    return similarity(code.strip(), solution.strip()).ratio


def similarity_reward(text: str, solution: str, block: str = "last") -> float:
    """difflib.SequenceMatcher ratio (autojunk off) between a code block of the answer and a
    ground-truth solution, both stripped of surrounding whitespace; 0 if the answer has no code. Its
    cost is bounded (:mod:`tritongym.rewards.similarity`: past ``WORK_LIMIT`` a lower bound of it).
    ``block``: ``last`` (the default, as :func:`extract_code`) or ``first`` (the Kernel Coder recipe)."""
    blocks = code_blocks(text)
    if block not in ("first", "last"):
        raise ValueError(f"block must be 'first' or 'last', not {block!r}")
    if not blocks:
        return 0.0
    return _ratio(blocks[0] if block == "first" else blocks[-1], solution)


@dataclass(frozen=True)
class KernelCoderFormatReward:
    """The Kernel Coder recipe's format reward: 1.0 for reasoning then code, 0.5 for reasoning
    without code, 0.0 otherwise.

    Reasoning is a non-empty ``<think>…</think>`` block; code is a fenced code block with a body that is
    not blank, that starts after ``</think>`` (code inside the reasoning does not count). Score the whole
    assistant message, prefill included (a prefilled ``<think>`` is part of the answer's reasoning block).
    """

    think_open: str = "<think>"
    think_close: str = "</think>"

    def __call__(self, text: str) -> float:
        start = text.find(self.think_open)
        end = text.find(self.think_close, start + len(self.think_open)) if start >= 0 else -1
        if end < 0 or not text[start + len(self.think_open) : end].strip():
            return 0.0
        after = end + len(self.think_close)
        return 1.0 if any(m.start() >= after for m in _code_fences(text)) else 0.5


def answer_block(text: str, think_open: str = "<think>", think_close: str = "</think>") -> str | None:
    """The first fenced code block that starts after the reasoning block closes (the code
    :class:`KernelCoderFormatReward` credits as the answer's), or None."""
    start = text.find(think_open)
    end = text.find(think_close, start + len(think_open)) if start >= 0 else -1
    if end < 0:
        return None
    after = end + len(think_close)
    return next((m.group(2) for m in _code_fences(text) if m.start() >= after), None)


@dataclass(frozen=True)
class KernelCoderReward:
    """The Kernel Coder recipe's reward of a text: ``w_format * format + w_similarity * similarity``,
    with :class:`KernelCoderFormatReward` and the difflib similarity (:func:`similarity_reward`'s
    ratio) of the answer's program to the reference Triton code (no GPU evaluation).

    The program is the one the answer submits: :meth:`score` takes it as extracted (the episode
    runner's ``outcome.code``: what a benchmark of the same answer evaluates); called on the text
    alone, it is the first code block after the reasoning (:func:`answer_block`). A block inside
    ``<think>`` is never scored: it is no answer for the format reward either, and paying its
    similarity paid a copy of the prompt's reference placed there beside a hollow answer (red team 9 #1)."""

    w_format: float = 1.0
    w_similarity: float = 1.0

    def __call__(self, text: str, solution: str) -> float:
        return self.score(text, answer_block(text), solution)

    def score(self, text: str, program: str | None, solution: str) -> float:
        """Format of ``text`` plus similarity of ``program`` (None: the answer has none, similarity 0)."""
        fmt = KernelCoderFormatReward()(text)
        return self.w_format * fmt + self.w_similarity * _ratio(program, solution)
