"""Render an EvalResult as the feedback a model reads in its next turn.

Two styles: ``text`` (concise lines: verdict, what went wrong and where in the candidate, the numeric
error, speedup with its confidence interval, coverage with the top kernels, findings) and ``json``
(the whole public result, as KernelGYM feeds its model). Both are bounded in length and scrubbed:
paths become ``solution.py`` (the candidate's own file) or ``<path>``/``<lib>``, long hex strings
(nonces, markers, keys) and credentials become placeholders. Results never carry seeds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from tritongym.errors import ConfigError
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.rewards.outcome import TIMING_UNTRUSTED

FeedbackStyle = Literal["text", "json"]
STYLES: tuple[str, ...] = ("text", "json")


@dataclass(frozen=True)
class FeedbackConfig:
    """How evaluation results are shown to the model."""

    style: FeedbackStyle = "text"
    """``text`` (concise lines) or ``json`` (the whole public result)."""
    max_chars: int = 2000
    """Longest rendered feedback; longer parts are cut (text) or fields shortened (json)."""
    traceback_lines: int = 6
    """Most lines of the candidate's traceback shown (its own frames, then the error)."""
    top_kernels: int = 4
    """Kernels listed with the coverage."""

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ConfigError(f"feedback style must be one of {', '.join(STYLES)}, not {self.style!r}")
        if self.max_chars < 200:
            raise ConfigError(f"feedback max_chars must be at least 200, not {self.max_chars}")
        if self.traceback_lines < 0 or self.top_kernels < 0:
            raise ConfigError("feedback traceback_lines and top_kernels must not be negative")


_CANDIDATE_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][^\s\"'/\\:,()]+)*[/\\]solution\.py")
_LIB_PATH = re.compile(r"(?:/[^\s\"':,()]+)*/(?:site-packages|dist-packages|lib/python3\.\d+)/")
_ABS_PATH = re.compile(r"(?<![\w.>])(?:~|/)(?:[\w.@+-]+/)+[\w.@+-]*")
_HEX = re.compile(r"\b[0-9a-fA-F]{16,}\b")
_SECRETS = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{16,})|(?i:bearer)\s+\S+")


def scrub(text: str) -> str:
    """Remove what the model must not see: paths outside its own file, nonces and credentials."""
    text = _SECRETS.sub("<secret>", text)
    text = _CANDIDATE_PATH.sub("solution.py", text)
    text = _LIB_PATH.sub("<lib>/", text)
    text = _ABS_PATH.sub("<path>", text)
    return _HEX.sub("<hex>", text)


def one_line(text: str) -> str:
    """``text`` on one line: its lines (every separator ``str.splitlines`` knows, ``\\r`` and
    ``\\u2028`` included) joined with `` | ``. Exception messages, op and kernel names are the
    candidate's to choose: kept on the line of the label that introduces them, they cannot forge a
    line of the environment's own (``Verdict: ok``, ``Speedup: ...``) in the model's next prompt."""
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 4, 0)].rstrip() + " ..."


_FRAME = re.compile(r'^\s*File "solution\.py", line (\d+), in (\S+)\s*$')
_ANY_FRAME = re.compile(r'^\s+File ".*", line \d+')


def candidate_traceback(detail: str, limit: int) -> list[str]:
    """From a scrubbed traceback: the candidate's own frames (``solution.py line N in f: code``) and
    the exception that ended it on one line (its message may have many), at most ``limit`` lines
    (the innermost frames kept)."""
    lines = detail.rstrip().splitlines()
    frames, end = [], 0
    for i, line in enumerate(lines):
        match = _FRAME.match(line)
        if match:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].lstrip().startswith("File") else ""
            frames.append(f"solution.py line {match.group(1)} in {match.group(2)}: {code}".rstrip(": "))
        if _ANY_FRAME.match(line):
            end = i + 1
    while end < len(lines) and lines[end].startswith(" "):  # the last frame's code and markers
        end += 1
    error = one_line("\n".join(lines[end:]))  # the exception, however many lines its message has
    if limit <= 0:
        return []
    kept = frames[-(limit - 1) :] if limit > 1 else []
    return [*kept, error] if error else kept


def _numbers(result: EvalResult) -> str:
    e = result.errors
    if e is None:
        return ""
    where = ",".join(str(i) for i in e.worst_index)
    line = (
        f"Numeric error ({e.output}): max abs {e.max_abs_error:.3g} (allowed {e.allowed_abs_error:.3g}), "
        f"max rel {e.max_rel_error:.3g}; at [{where}] got {e.got:.6g}, expected {e.expected:.6g}; "
        f"{e.mismatched} of {e.numel} elements over the allowed error."
    )
    if e.reference_error is not None:
        line += f" PyTorch's own error at this dtype: {e.reference_error:.3g}."
    return line


def _speed(result: EvalResult, top: int) -> list[str]:
    lines = []
    if result.speedup is not None and result.timing is not None:
        t = result.timing
        low, high = t.speedup_ci
        lines.append(
            f"Speedup: {result.speedup:.3g}x over {t.baseline} (95% CI {low:.3g}-{high:.3g}; "
            f"{t.candidate_ms * 1e3:.1f} us vs {t.reference_ms * 1e3:.1f} us)."
        )
    elif result.correct:
        untrusted = [f.message for f in result.findings if f.check == TIMING_UNTRUSTED]
        if untrusted:
            lines.append(f"Speedup: not measured; timing gave {one_line(untrusted[0])}.")
        else:
            lines.append("Speedup: not measured (no GPU timing in this evaluation).")
    if result.coverage is not None:
        kernels = ", ".join(
            f"{one_line(k.name)[:48]} {k.share:.0%}{'' if k.own else ' (not yours)'}" for k in result.kernels[:top]
        )
        listed = f" ({kernels})." if kernels else "."
        lines.append(f"Coverage: {result.coverage:.2f} of GPU time in your Triton kernels{listed}")
    return lines


def render_text(result: EvalResult, config: FeedbackConfig) -> str:
    """Concise lines, each begun by the environment: text the candidate may have chosen (the judge's
    feedback quotes its exception messages, findings its op names) follows a label on one line."""
    status = "correct" if result.correct else ("compiled, not correct" if result.compiled else "did not run")
    trials = f"; {result.trials_passed}/{result.trials} trials passed" if result.trials else ""
    lines = [f"Verdict: {result.verdict.value} ({status}{trials})."]
    if result.correct:
        lines += _speed(result, config.top_kernels)
    else:
        lines.append(f"Feedback: {one_line(scrub(result.feedback))}")
        trace = candidate_traceback(scrub(result.detail), config.traceback_lines) if result.detail else []
        if trace:
            lines.append("Traceback (your code):")
            lines += [f"  {line}" if line.startswith("solution.py line ") else f"  raised: {line}" for line in trace]
        numbers = _numbers(result)
        if numbers:
            lines.append(numbers)
    for finding in result.findings:
        lines.append(f"Finding [{one_line(finding.check)}]: {one_line(scrub(finding.message))}")
    return _cut("\n".join(line for line in lines if line), config.max_chars)


_DROPPED = ("versions", "stage_seconds", "device")
"""Fields of no use to the model (machine details and timings of our stages)."""


def public_result(result: EvalResult) -> dict[str, Any]:
    """The result as the model may see it: scrubbed strings, without machine details."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return scrub(value)
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    data = result.to_dict()
    for name in _DROPPED:
        data.pop(name, None)
    data["verdict"] = result.verdict.value
    return clean(data)


def render_json(result: EvalResult, config: FeedbackConfig) -> str:
    data = public_result(result)
    data["kernels"] = data["kernels"][: config.top_kernels]
    text = json.dumps(data, indent=1)
    for limit in (2000, 1000, 400, 100, 0):
        if len(text) <= config.max_chars:
            return text
        for name in ("detail", "stdout", "stderr", "feedback"):
            if isinstance(data.get(name), str) and len(data[name]) > limit:
                data[name] = data[name][-limit:] if limit else ""
        data["findings"] = data["findings"][: max(limit // 100, 1)]
        text = json.dumps(data, indent=1)
    return json.dumps({"verdict": data["verdict"], "correct": data["correct"], "feedback": data["feedback"]})


def render_feedback(result: EvalResult, config: FeedbackConfig | None = None) -> str:
    """The feedback of one evaluation, by ``config.style``."""
    config = config or FeedbackConfig()
    if result.verdict is Verdict.INFRASTRUCTURE_ERROR:
        return "The evaluation failed through no fault of your code; it could not be judged."
    return render_json(result, config) if config.style == "json" else render_text(result, config)
