"""Read an evaluation outcome field from an EvalResult, a dataclass or a plain mapping (e.g. a JSONL
row), so rewards stay pure functions with no dependency on the evaluator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INFRASTRUCTURE = "infrastructure_error"
HACK_PREFIX = "hack_"
COMPILE_FAILURES = frozenset(
    {"invalid_source", "syntax_error", "import_error", "interface_error", "compile_error", "timeout", "crash"}
)
"""Verdicts where the candidate never produced an output to compare ("failed", not "incorrect")."""


def field(result: Any, name: str, default: Any = None) -> Any:
    if isinstance(result, Mapping):
        return result.get(name, default)
    return getattr(result, name, default)


def verdict(result: Any) -> str:
    return str(getattr(field(result, "verdict"), "value", field(result, "verdict")))


IMPLAUSIBLE_SPEEDUP = "implausible_speedup"


def trusted_speedup(result: Any) -> float | None:
    """The measured speedup, or None where there is none or the evaluator flagged it as beyond the
    device's roofline (a timing that was evaded, not beaten, earns no speed reward)."""
    findings = field(result, "findings") or []
    checks = {f.get("check") if isinstance(f, Mapping) else getattr(f, "check", None) for f in findings}
    return None if IMPLAUSIBLE_SPEEDUP in checks else field(result, "speedup")
