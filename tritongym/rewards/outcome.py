"""Read an evaluation outcome field from an EvalResult, a dataclass or a plain mapping (e.g. a JSONL
row), so rewards stay pure functions of the outcome (result.py, the only part of the evaluator they
use, is stdlib-only)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tritongym.evaluate.result import Category, Verdict


def field(result: Any, name: str, default: Any = None) -> Any:
    if isinstance(result, Mapping):
        return result.get(name, default)
    return getattr(result, name, default)


def verdict(result: Any) -> str:
    return str(getattr(field(result, "verdict"), "value", field(result, "verdict")))


NO_CODE = "no_code"
"""The outcome of an answer with no extractable solution (nothing was evaluated): a ``failed`` one."""
NO_CODE_OUTCOME: Mapping[str, Any] = {"verdict": NO_CODE, "correct": False}
"""What a reward scores for an answer with no code (the agent's runner, the integrations)."""


def category(result: Any) -> Category:
    """The verdict's category (ok, failed, incorrect, hack, infrastructure): what every reward keys on.
    ``no_code`` is ``failed``. An unknown verdict raises ValueError rather than earn a made-up reward."""
    name = verdict(result)
    return Category.FAILED if name == NO_CODE else Verdict(name).category


def is_hack(verdict: str) -> bool:
    """Whether a verdict (a string, as records and scores keep it) is in the ``hack`` category; a name
    that is no verdict (``no_code``, ``unevaluated``, one this version does not know) is not."""
    try:
        return Verdict(verdict).category is Category.HACK
    except ValueError:
        return False


IMPLAUSIBLE_SPEEDUP = "implausible_speedup"
TIMING_UNTRUSTED = "timing_untrusted"
"""The finding of a timing that could not produce a trustworthy number (speedup None on a GPU): too
few valid repetitions before its ceiling, or the GPU had other work on it in most of them."""


def _checks(result: Any) -> set:
    findings = field(result, "findings") or []
    return {f.get("check") if isinstance(f, Mapping) else getattr(f, "check", None) for f in findings}


def timing_untrusted(result: Any) -> bool:
    """Whether the evaluator timed the candidate but could not trust the timing (no speedup)."""
    return TIMING_UNTRUSTED in _checks(result)


def number(value: Any) -> float | None:
    """A result's number as a float, or None where it is missing, not a number, NaN or infinite (a
    reward computed from such a value would be NaN or unbounded, and one NaN reward turns every
    advantage of its group into NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def trusted_speedup(result: Any) -> float | None:
    """The measured speedup, or None where there is none, it is not a finite number, or the evaluator
    flagged it as beyond the device's roofline (a timing that was evaded, not beaten, earns no speed
    reward)."""
    return None if IMPLAUSIBLE_SPEEDUP in _checks(result) else number(field(result, "speedup"))


def trusted_coverage(result: Any) -> float | None:
    """The profiling coverage, a share, within [0, 1]; None where there is none or it is not a finite
    number."""
    coverage = number(field(result, "coverage"))
    return None if coverage is None else min(max(coverage, 0.0), 1.0)
