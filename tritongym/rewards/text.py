"""Rewards of the model's text alone: answer format, and similarity to a known solution (difflib)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def code_blocks(text: str) -> list[str]:
    """The bodies of the fenced code blocks of ``text``, in order."""
    return [m.group(2) for m in _FENCE.finditer(text)]


def extract_code(text: str) -> str | None:
    """The last fenced code block (models often show a draft first), or None."""
    blocks = code_blocks(text)
    return blocks[-1] if blocks else None


@dataclass(frozen=True)
class FormatReward:
    """1.0 for a reasoning block followed by exactly one fenced code block; 0.5 for exactly one code
    block without a reasoning block before it; 0.0 otherwise."""

    think_open: str = "<think>"
    think_close: str = "</think>"
    full: float = 1.0
    partial: float = 0.5

    def __call__(self, text: str) -> float:
        fences = list(_FENCE.finditer(text))
        if len(fences) != 1:
            return 0.0
        start = text.find(self.think_open)
        end = text.find(self.think_close, start + len(self.think_open)) if start >= 0 else -1
        reasoned = start >= 0 and end >= 0 and end + len(self.think_close) <= fences[0].start()
        if reasoned and text[start + len(self.think_open) : end].strip():
            return self.full
        return self.partial


def similarity_reward(text: str, solution: str) -> float:
    """difflib.SequenceMatcher ratio between the answer's code and a ground-truth solution (0 if no code)."""
    code = extract_code(text)
    if code is None:
        return 0.0
    return difflib.SequenceMatcher(None, code.strip(), solution.strip(), autojunk=False).ratio()
