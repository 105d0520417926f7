"""Episodes -> training rows: each scored turn is one row holding its full context (the prompt the
policy saw) followed by its answer; the loss mask covers the answer's tokens only.

Episodes with a turn that could not be judged (infrastructure or generation error) are dropped
whole and counted: their later turns are missing, so their returns would be wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from tritongym.agent.episodes import Episode
from tritongym.agent.records import TurnRecord
from tritongym.errors import ConfigError
from tritongym.rewards.outcome import is_hack, lazy, reward_coverage, trusted_speedup


@dataclass
class Rows:
    """One step's rows as tensors. Per-token tensors are aligned with the *targets* ``input_ids[:, 1:]``."""

    records: list[TurnRecord]
    input_ids: Tensor
    """long [B, L], right-padded."""
    attention_mask: Tensor
    """long [B, L]."""
    token_mask: Tensor
    """bool [B, L-1]: the target is one of the answer's tokens."""
    behaviour_logp: Tensor
    """float [B, L-1]: the rollout engine's log-probs of the answer's tokens (0 elsewhere)."""
    rewards: Tensor
    """float [B]."""
    group: Tensor
    """long [B]: the problem (the baseline group)."""
    trajectory: Tensor
    """long [B]: the episode."""
    turn: Tensor
    """long [B]: the turn within the episode."""
    correct: Tensor
    """bool [B]."""
    coverage: Tensor
    """float [B]: the coverage rewards credit (``outcome.reward_coverage``: measured, or on the CPU 0 for a
    correct turn with a ``torch_compute``/``host_read`` finding and 1 for one without); NaN for the rest."""
    speedup: Tensor
    """float [B]: the speedup the rewards trust (``outcome.trusted_speedup``); NaN where not measured, where
    flagged beyond the roofline, and for a lazy turn (its speedup is PyTorch's or the host's: PRS's
    ``keep_if_speedup`` kept such a turn whatever its coverage, red team 23 #9)."""
    hack: Tensor | None = None
    """bool [B]: the turn's verdict was a hack (multi-turn estimators never drop such a turn)."""
    dropped_episodes: int = 0
    dropped_turns: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.records)


def _speedup(record: TurnRecord) -> float:
    result = record.result or {}
    value = None if lazy(result) else trusted_speedup(result)
    return math.nan if value is None else value


def _coverage(record: TurnRecord) -> float:
    value = reward_coverage({**(record.result or {}), "verdict": record.verdict})
    return math.nan if value is None else value


def build_rows(episodes: list[Episode], pad_id: int) -> Rows:
    """Rows of every scored turn of every episode that was judged to its end."""
    records, groups, trajectories = [], [], []
    problems: dict[str, int] = {}
    dropped_episodes = dropped_turns = 0
    for index, episode in enumerate(episodes):
        if not episode.scored or any(r.reward is None for r in episode.records):
            dropped_episodes += 1
            dropped_turns += len(episode.records)
            continue
        group = problems.setdefault(episode.problem.name, len(problems))
        for record in episode.records:
            if (record.completion and not record.token_ids) or len(record.logprobs) != len(record.token_ids):
                raise ConfigError(
                    f"{record.problem} turn {record.turn}: the rollout policy returned no token ids or no "
                    "log-prob per token; training needs a local policy (the hf engine)"
                )
            records.append(record)
            groups.append(group)
            trajectories.append(index)
    width = max((len(r.prompt_token_ids) + len(r.token_ids) for r in records), default=1)
    n = len(records)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    attention = torch.zeros((n, width), dtype=torch.long)
    token_mask = torch.zeros((n, max(width - 1, 0)), dtype=torch.bool)
    behaviour = torch.zeros((n, max(width - 1, 0)), dtype=torch.float32)
    for i, r in enumerate(records):
        p, c = len(r.prompt_token_ids), len(r.token_ids)
        input_ids[i, : p + c] = torch.tensor(r.prompt_token_ids + r.token_ids, dtype=torch.long)
        attention[i, : p + c] = 1
        if c:
            token_mask[i, p - 1 : p - 1 + c] = True
            behaviour[i, p - 1 : p - 1 + c] = torch.tensor(r.logprobs, dtype=torch.float32)
    return Rows(
        records=records,
        input_ids=input_ids,
        attention_mask=attention,
        token_mask=token_mask,
        behaviour_logp=behaviour,
        rewards=torch.tensor([float(r.reward) for r in records], dtype=torch.float32),
        group=torch.tensor(groups, dtype=torch.long),
        trajectory=torch.tensor(trajectories, dtype=torch.long),
        turn=torch.tensor([r.turn for r in records], dtype=torch.long),
        correct=torch.tensor([bool((r.result or {}).get("correct")) for r in records], dtype=torch.bool),
        coverage=torch.tensor([_coverage(r) for r in records], dtype=torch.float32),
        speedup=torch.tensor([_speedup(r) for r in records], dtype=torch.float32),
        hack=torch.tensor([is_hack(r.verdict) for r in records], dtype=torch.bool),
        dropped_episodes=dropped_episodes,
        dropped_turns=dropped_turns,
    )
