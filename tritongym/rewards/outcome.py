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


TORCH_COMPUTE = "torch_compute"
HOST_READ = "host_read"
LAZY_CHECKS = (TORCH_COMPUTE, HOST_READ)
"""The findings of a correct candidate that left part of forward's work to something other than its own
kernels: PyTorch compute ops (``torch_compute``, the ``penalize`` policy) or host code fed by reads of
device memory (``host_read``, counted by every runner)."""


def lazy(result: Any) -> bool:
    """Whether the result carries a finding that part of forward's work ran outside the candidate's own
    Triton kernels (``LAZY_CHECKS``)."""
    return bool(_checks(result) & set(LAZY_CHECKS))


def reward_coverage(result: Any) -> float | None:
    """The share of forward's work the rewards credit to the candidate's own kernels (PR and PRS).

    Profiled (a GPU): the measured coverage (:func:`trusted_coverage`). Not profiled (the CPU
    interpreter, or profiling off), a correct result's share from the judge's findings, the only
    evidence there is: 1.0 with none of ``LAZY_CHECKS`` (no PyTorch compute op ran in forward and it
    read too little device memory on the host to compute the output there, so its own kernels did
    all the work the judge can see), 0.0 with one (the judge can vouch for no share of the work: the
    PyTorch op or the host code may have done all of it, as a token launch beside PyTorch's answer
    does). So a lazy kernel earns no coverage reward and PRS rejects it, as low measured coverage
    does on a GPU. None for any other verdict (``no_code`` and ``unevaluated`` included): coverage
    scores correct results only.

    A lazy result's measured coverage is credited at most the share of the reference's time that its
    work outside its own kernels leaves, ``1 - (1 - coverage) / speedup`` (clamped to [0, 1]), where
    its speedup is trusted: coverage is by launch identity and time, so a kernel spinning beside
    PyTorch's work raised it at no cost (red team 23 #10: PyTorch's op doing all the work beside a
    spin 19 times as long read 0.95, and PRS kept it). PyTorch's own time is in the non-own share; as
    long as the reference's, it leaves nothing for the kernels to have done."""
    measured = trusted_coverage(result)
    if measured is not None:
        speedup = trusted_speedup(result)
        if lazy(result) and speedup is not None and speedup > 0:
            return min(measured, max(1.0 - (1.0 - measured) / speedup, 0.0))
        return measured
    if verdict(result) != Verdict.OK.value:
        return None
    return 0.0 if lazy(result) else 1.0
