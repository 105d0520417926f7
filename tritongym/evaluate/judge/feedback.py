"""Feedback a model can act on: failures with the candidate's line, and the speed summary."""

from __future__ import annotations

import traceback

from tritongym.evaluate.result import Verdict

MAX_FEEDBACK_CHARS = 8000
"""Longest feedback (and detail) a result carries: both go into logs, the service's answers and the
model's next prompt, and parts of them (exception messages, a dict output's keys) are the
candidate's to choose."""


def bounded(text: str, limit: int = MAX_FEEDBACK_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    return text if len(text) <= limit else f"{text[:limit]} ... ({len(text) - limit} more characters)"


class Failure(Exception):
    """Ends the evaluation with a verdict."""

    def __init__(self, verdict: Verdict, feedback: str, detail: str = ""):
        super().__init__(feedback)
        self.verdict, self.feedback, self.detail = verdict, feedback, detail


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def candidate_location(exc: BaseException, path: str) -> str:
    """``line N: <code>`` of the innermost frame in the candidate's file, over the cause chain."""
    for error in _exception_chain(exc):
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
        if frames:
            frame = frames[-1]
            return f"line {frame.lineno}: {(frame.line or '').strip()}"
    return ""


def detail(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))[-8000:]


def short(exc: BaseException, limit: int = 1500) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def with_reason(exc: BaseException) -> str:
    """``short(exc)``, followed by the exception it was raised from where its own message leaves that
    out (Triton 3.4's ``CompilationError`` names the source line but not why: the reason, such as
    ``arange's range must be a power of 2``, is only its cause)."""
    text, reason = short(exc), exc.__cause__
    if reason is None or not str(reason) or str(reason) in str(exc):
        return text
    return f"{text}\n{short(reason, 500)}"


def _is_triton_error(exc: BaseException) -> bool:
    return any(type(e).__module__.split(".")[0] == "triton" for e in _exception_chain(exc))


def classify_failure(exc: BaseException, path: str, what: str) -> Failure:
    """Turn an exception raised by candidate code into a verdict with actionable feedback."""
    where = candidate_location(exc, path)
    at = f" ({where})" if where else ""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return Failure(Verdict.OUT_OF_MEMORY, f"Out of memory {what}: {short(exc, 300)}{at}", detail(exc))
    if _is_triton_error(exc):
        cause = next(e for e in _exception_chain(exc) if type(e).__module__.split(".")[0] == "triton")
        return Failure(
            Verdict.COMPILE_ERROR,
            f"A Triton kernel failed to compile or launch {what}{at}: {with_reason(cause)}",
            detail(exc),
        )
    return Failure(Verdict.RUNTIME_ERROR, f"{short(exc)} {what}{at}", detail(exc))


_BASELINE_NAMES = {"eager": "eager PyTorch", "compile": "torch.compile"}


def speed_feedback(result: dict) -> str:
    """The speed and coverage part of the feedback a model reads."""
    parts = []
    timing = result.get("timing")
    untrusted = [f["message"] for f in result.get("findings") or () if f.get("check") == "timing_untrusted"]
    if untrusted:
        parts.append(f" Timing gave {untrusted[0]}.")
    elif timing and result.get("speedup") is not None:
        low, high = timing["speedup_ci"]
        against = _BASELINE_NAMES[timing["baseline"]]
        parts.append(
            f" Speedup {result['speedup']:.3g}x over {against} (95% CI {low:.3g}-{high:.3g}; "
            f"{timing['candidate_ms'] * 1e3:.1f} us vs {timing['reference_ms'] * 1e3:.1f} us)."
        )
    if result.get("coverage") is not None:
        top = ", ".join(
            f"{k['name'][:40]}{'' if k['own'] else ' (not yours)'} {k['share']:.0%}" for k in result["kernels"][:4]
        )
        parts.append(f" Coverage {result['coverage']:.2f} of GPU time in your Triton kernels ({top}).")
    return "".join(parts)
