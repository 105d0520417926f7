"""Extract a candidate program from a model's answer.

Three policies: ``first`` (the first fenced code block), ``last`` (the last one: models often show a
draft first) and ``answer`` (the last code block inside the last ``<answer>...</answer>``; the bare
text inside the tags if it holds no fence; the last code block of the whole answer if there are no
tags). The chosen code must define the class the problem needs (``ModelNew``). Whatever goes wrong,
the result is an :class:`Extraction` with no code and a feedback line saying what was expected,
never an exception: an answer without code is the model's outcome (``no_code``), not an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tritongym.errors import ConfigError
from tritongym.rewards.text import code_blocks

ExtractionPolicy = Literal["first", "last", "answer"]
POLICIES: tuple[str, ...] = ("first", "last", "answer")

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.DOTALL)
_OPEN_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n")


@dataclass(frozen=True)
class Extraction:
    """The candidate source, or why there is none."""

    code: str | None
    feedback: str = ""
    """For a missing or unusable program: a line the model can act on ("" when code was found)."""


def _class_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"^class[ \t]+{re.escape(name)}\b", re.MULTILINE)


def _expected(solution_class: str) -> str:
    return f"one ```python code block with the whole program, defining class {solution_class}(nn.Module)"


def _pick(text: str, policy: str) -> str | None:
    if policy == "answer":
        answers = _ANSWER.findall(text)
        if answers:
            inside = answers[-1]
            blocks = code_blocks(inside)
            if blocks:
                return blocks[-1]
            if _OPEN_FENCE.search(inside) is None and inside.strip():
                return inside.strip("\n")
        policy = "last"
    blocks = code_blocks(text)
    if not blocks:
        return None
    return blocks[0] if policy == "first" else blocks[-1]


def extract(text: str, solution_class: str, policy: str = "last", finish_reason: str = "stop") -> Extraction:
    """The program of an answer by ``policy``; ``finish_reason`` ``length`` explains a cut-off answer."""
    if policy not in POLICIES:
        raise ConfigError(f"extraction policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    code = _pick(text, policy)
    if code is None or not code.strip():
        found = "No code block was found in your answer."
        if finish_reason == "length":
            found = "The answer was cut off (token limit) before its code block ended."
        return Extraction(None, f"{found} Expected {_expected(solution_class)}.")
    if not _class_pattern(solution_class).search(code):
        which = {"first": "first", "last": "last", "answer": "chosen"}[policy]
        return Extraction(
            None,
            f"The {which} code block of your answer does not define class {solution_class}. "
            f"Expected {_expected(solution_class)}.",
        )
    return Extraction(code)
