"""Trajectory records: one JSON line per turn of an episode, the input of reports, SFT and training.

The schema is documented field by field in docs/trajectories.md; keep the two in step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from tritongym.evaluate.result import EvalResult
from tritongym.rewards.outcome import NO_CODE as NO_CODE


@dataclass
class TurnRecord:
    """One turn of one episode: what the policy saw, what it answered, and what the answer was worth."""

    run_id: str
    problem: str
    """The problem's name (``Problem.name``)."""
    sample: int
    """Index of the episode among the samples of this problem (0 .. samples-1)."""
    turn: int
    """0-based turn within the episode (counted across iterations in test-time-scaling runs)."""
    messages: list[dict[str, str]]
    """The conversation the policy was given for this turn (after the history mode was applied)."""
    completion: str
    """The policy's raw answer (the continuation of the prefill, if ``messages`` ends with one)."""
    verdict: str
    """The EvalResult's verdict, ``no_code`` when no solution could be extracted (nothing was evaluated),
    or ``infrastructure_error`` for a turn left unscored (see ``error``)."""
    iteration: int = 0
    """Test-time-scaling iteration (0 when the run has one)."""
    model: str = ""
    code: str | None = None
    """The extracted candidate source, or None."""
    result: dict[str, Any] | None = None
    """The whole EvalResult (``EvalResult.to_dict``), or None when nothing was evaluated."""
    reward: float | None = None
    """The scalar reward of this turn; None for infrastructure errors (never a training signal)."""
    rewards: dict[str, float] = field(default_factory=dict)
    """Named reward components, when the reward is composed."""
    finish_reason: str = "stop"
    """``stop``, ``length`` (the token limit cut the answer) or ``error`` (generation failed)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_token_ids: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    """Behaviour log-probabilities of ``token_ids`` (local policies only)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of this turn's stages: ``generate`` (its batched call, retries included) and ``evaluate``
    (submission to result, queue and retries included; absent when nothing was evaluated)."""
    error: str = ""
    """Why the turn was left unscored (verdict ``infrastructure_error``, reward None): the evaluation or
    the generation failed through no fault of the model, after the runner's retries. "" otherwise."""

    def answer_text(self) -> str:
        """The whole answer: the assistant prefill the policy continued (if any), then the completion."""
        last = self.messages[-1] if self.messages else {}
        prefill = last.get("content", "") if last.get("role") == "assistant" else ""
        return prefill + self.completion

    def eval_result(self) -> EvalResult | None:
        return None if self.result is None else EvalResult.from_dict(self.result)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown trajectory record fields: {sorted(unknown)}")
        return cls(**data)


def write_records(path: str | Path, records: Iterable[TurnRecord]) -> None:
    """Append records to a JSONL file, one line each, flushed line by line."""
    with open(path, "a", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record.to_dict()) + "\n")
            fh.flush()


def read_records(path: str | Path) -> Iterator[TurnRecord]:
    """Records of a JSONL file; a last line cut short by an interrupted run is skipped."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number >= len(lines) - 1:  # the last, partial line of an interrupted run
                return
            raise ValueError(f"{path}:{number}: not a JSON line") from None
        try:
            if not isinstance(data, dict):
                raise ValueError(f"a {type(data).__name__}, not an object")
            record = TurnRecord.from_dict(data)
        except (TypeError, ValueError) as exc:  # another file's rows (eval's results), or a missing field
            raise ValueError(
                f"{path}:{number}: not a trajectory record ({exc}); a bench or train run's trajectories.jsonl "
                "holds one per turn"
            ) from None
        yield record
