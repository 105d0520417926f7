"""verl integration: a custom reward function, tritongym's advantage estimators and dual-clip loss in
verl's registries, the dataset builder, and (``integrations.verl_agent``) a multi-turn agent loop.

* :func:`compute_score` (async) / :func:`compute_score_sync` / :func:`compute_score_batch`: verl's
  custom reward function (``reward.custom_reward_function.path=pkg://tritongym.integrations.verl``).
  The problem travels in ``extra_info`` (the columns :func:`verl_rows` writes). verl's reward loop
  awaits an async ``compute_score`` for every sample at once, so all evaluations of a batch run
  concurrently on the Env; the legacy batch reward manager gets :func:`compute_score_batch`.
* :func:`verl_advantages`: verl's tensors (``token_level_rewards`` and ``response_mask`` [B, T], the
  ``uid`` index [B]) -> tritongym's estimators -> verl's (advantages, returns) [B, T]. Each maximal run
  of response tokens (``response_mask == 1``) is one assistant turn; a reward belongs to the turn whose
  span (from its first token up to the next turn) holds it. A NaN reward (an infrastructure error,
  see ``compute_score``) takes no part: advantage 0 and no place in any baseline.
* :func:`verl_policy_loss`: verl's policy-loss signature -> :func:`tritongym.rl.policy_loss` (dual
  clip), aggregated over verl's global batch so the loss does not depend on data parallelism.
* :func:`register_with_verl`: puts them in verl's registries as ``tritongym_<name>`` and
  ``tritongym_dual_clip``, and the agent loop as ``tritongym_kernel``. verl imports
  ``tritongym.integrations.verl_plugin`` (which calls it) in every process when
  ``VERL_USE_EXTERNAL_MODULES=tritongym.integrations.verl_plugin`` is set.

verl is imported lazily, only by :func:`register_with_verl` and ``verl_agent`` (``pip install
'tritongym[verl]'``); everything else here is plain torch and runs without it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from tritongym.env.base import Env
from tritongym.errors import ConfigError
from tritongym.integrations.scoring import (
    Score,
    Scorer,
    default_messages,
    env_from_spec,
    problem_columns,
    problem_from_columns,
)
from tritongym.problems import Problem
from tritongym.rewards import TieredReward, VerifiableReward
from tritongym.rewards.outcome import is_hack
from tritongym.rl import PolicyLossConfig, compute_advantages, policy_loss, returns_to_go

log = logging.getLogger(__name__)

DATA_SOURCE = "tritongym"
"""The ``data_source`` of every row :func:`verl_rows` writes."""

ESTIMATORS = ("grpo", "rloo", "trloo", "discounted", "reinforce")
"""tritongym estimators registered with verl, each as ``tritongym_<name>``."""

POLICY_LOSS = "tritongym_dual_clip"
AGENT_LOOP = "tritongym_kernel"

REWARDS: dict[str, Callable[[], Callable[[Any], float | None]]] = {
    "verifiable": VerifiableReward,
    "tiered": TieredReward,
}
"""Outcome rewards selectable by name from verl's ``reward_kwargs``."""

# --- the dataset -----------------------------------------------------------------------------------


def verl_rows(
    problems: Iterable[Problem],
    *,
    messages: Callable[[Problem], list[dict[str, str]]] | None = None,
    small: bool = False,
    split: str = "train",
    agent_name: str | None = None,
) -> list[dict[str, Any]]:
    """Rows in verl's RL dataset format (``prompt``, ``data_source``, ``ability``, ``reward_model``,
    ``extra_info``), the problem in ``extra_info``. ``agent_name``: the agent loop of every row (e.g.
    ``tritongym_kernel`` for multi-turn), or None for verl's default."""
    build = messages or default_messages
    rows = []
    for index, problem in enumerate(problems):
        problem = problem.small() if small else problem
        row = {
            "data_source": DATA_SOURCE,
            "prompt": build(problem),
            "ability": "triton",
            "reward_model": {"style": "rule", "ground_truth": problem.solution or ""},
            "extra_info": {"index": index, "split": split, **problem_columns(problem)},
        }
        if agent_name is not None:
            row["agent_name"] = agent_name
        rows.append(row)
    if not rows:
        raise ValueError("no problems to build a dataset from")
    return rows


def write_verl_dataset(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write :func:`verl_rows` as the parquet file verl's ``data.train_files`` reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# --- the reward function ---------------------------------------------------------------------------


def scorer_for(env: str | Env | None = None, reward: str = "verifiable") -> Scorer:
    """A Scorer on ``env`` (an Env, or a spec for :func:`env_from_spec`) with the named outcome reward."""
    if reward not in REWARDS:
        raise ConfigError(f"reward must be one of {', '.join(REWARDS)}, not {reward!r}")
    target = env if env is not None and not isinstance(env, str) else env_from_spec(env)
    return Scorer(target, reward=REWARDS[reward]())


def problem_of(extra_info: Mapping[str, Any] | None) -> Problem:
    """The problem a verl row carries in ``extra_info`` (the columns :func:`verl_rows` writes)."""
    info = extra_info or {}
    if "problem_source" not in info or "problem" not in info:
        raise ConfigError(
            "extra_info has no 'problem'/'problem_source': build the dataset with tritongym.integrations.verl.verl_rows"
        )
    return problem_from_columns(
        info["problem"], info["problem_source"], info.get("entry_point"), info.get("problem_shrunk")
    )


def score_dict(score: Score, infrastructure_score: float = math.nan) -> dict[str, float]:
    """What verl gets: ``score`` (``infrastructure_score`` for an infrastructure error, NaN by default:
    tritongym's estimators leave such samples out) and numeric extras for its metrics."""
    result = score.result
    return {
        "score": infrastructure_score if score.reward is None else float(score.reward),
        "correct": float(bool(result is not None and result.correct)),
        "compiled": float(bool(result is not None and result.compiled)),
        "hack": float(is_hack(score.verdict)),  # the category: uninitialized_output too (red team 9 #3)
        "no_code": float(result is None),
        "infrastructure_error": float(score.infrastructure_error),
    }


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    *,
    env: str | Env | None = None,
    reward: str = "verifiable",
    infrastructure_score: float = math.nan,
    **kwargs: Any,
) -> dict[str, float]:
    """verl's custom reward function (async): extract the code of ``solution_str``, evaluate it on the
    problem in ``extra_info``, return ``{"score": ..., "correct": ..., ...}``. ``env``/``reward``/
    ``infrastructure_score`` come from ``reward.custom_reward_function.reward_kwargs``."""
    (score,) = await scorer_for(env, reward).ascore([problem_of(extra_info)], [solution_str])
    return score_dict(score, infrastructure_score)


def compute_score_sync(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    *,
    env: str | Env | None = None,
    reward: str = "verifiable",
    infrastructure_score: float = math.nan,
    **kwargs: Any,
) -> dict[str, float]:
    """:func:`compute_score` for reward managers that call it synchronously (one sample at a time:
    prefer the async one or :func:`compute_score_batch`, which evaluate a batch concurrently)."""
    (score,) = scorer_for(env, reward).score([problem_of(extra_info)], [solution_str])
    return score_dict(score, infrastructure_score)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None],
    *,
    env: str | Env | None = None,
    reward: str = "verifiable",
    infrastructure_score: float = math.nan,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """For verl's legacy ``batch`` reward manager: the whole batch evaluated at once, in input order."""
    problems = [problem_of(info) for info in extra_infos]
    scores = scorer_for(env, reward).score(problems, list(solution_strs))
    return [score_dict(s, infrastructure_score) for s in scores]


# --- advantage estimators on verl's tensors ---------------------------------------------------------


def turn_of_tokens(response_mask: Tensor) -> Tensor:
    """long [B, T]: the turn each token belongs to. Turn k starts at the k-th run of response tokens
    (mask 1) and lasts until the next one starts (the environment's tokens between belong to it)."""
    mask = response_mask.bool()
    previous = torch.nn.functional.pad(mask[:, :-1], (1, 0), value=False)
    starts = mask & ~previous
    return (starts.long().cumsum(dim=1) - 1).clamp_min(0)


def verl_advantages(
    name: str,
    token_level_rewards: Tensor,
    response_mask: Tensor,
    index: Sequence[Any] | np.ndarray | None = None,
    **options: Any,
) -> tuple[Tensor, Tensor]:
    """Run tritongym's estimator ``name`` on verl's tensors; returns verl's (advantages, returns), [B, T].

    One sample per (row, turn): its reward is the sum of ``token_level_rewards`` over the turn's span;
    its group is the row's ``index`` (verl's ``uid``, one per prompt; each row its own group if None);
    its trajectory is the row. Advantages and returns-to-go (``gamma`` from ``options``, default 1) of
    a turn are spread over the turn's response tokens. Rows whose reward is NaN, or with no response
    token, are masked out. A single-turn row is one sample, as in verl's own outcome estimators.
    """
    rewards, mask = token_level_rewards.float(), response_mask.float()
    rows, length = rewards.shape
    turn = turn_of_tokens(mask)
    turns = int(turn.max()) + 1 if turn.numel() else 1
    nan_row = torch.isnan(rewards).any(dim=1)
    slot = torch.arange(rows)[:, None] * turns + turn
    per_turn = torch.zeros(rows * turns).index_add_(0, slot.reshape(-1), torch.nan_to_num(rewards).reshape(-1))
    exists = torch.zeros(rows * turns, dtype=torch.bool)
    exists[slot[mask.bool()]] = True
    row_of = torch.arange(rows).repeat_interleave(turns)
    turn_ids = torch.arange(turns).repeat(rows)
    if index is None:
        group = torch.arange(rows)
    else:
        group = torch.as_tensor(np.unique(np.asarray(index, dtype=object).astype(str), return_inverse=True)[1])
    valid = exists & ~nan_row[row_of]
    samples = valid.nonzero().squeeze(1) if bool(valid.any()) else torch.zeros(0, dtype=torch.long)
    advantages_flat = torch.zeros(rows * turns)
    returns_flat = torch.zeros(rows * turns)
    if samples.numel():
        sample_rewards, sample_rows, sample_turns = per_turn[samples], row_of[samples], turn_ids[samples]
        advantages_flat[samples] = compute_advantages(
            name, sample_rewards, group[sample_rows].long(), turn=sample_turns, trajectory=sample_rows, **options
        )
        gamma = float(options.get("gamma", 1.0))
        returns_flat[samples] = returns_to_go(sample_rewards, sample_rows, sample_turns, gamma)
    spread = mask * ~nan_row[:, None]
    advantages = advantages_flat[slot.reshape(-1)].view(rows, length) * spread
    returns = returns_flat[slot.reshape(-1)].view(rows, length) * spread
    return advantages.to(token_level_rewards.dtype), returns.to(token_level_rewards.dtype)


def _option(config: Any, name: str, default: Any) -> Any:
    """A field of a verl config (a dataclass, an OmegaConf node or a dict), or ``default``."""
    if config is None:
        return default
    value = config.get(name, default) if hasattr(config, "get") else getattr(config, name, default)
    return default if value is None else value


def estimator_options(name: str, config: Any) -> dict[str, Any]:
    """tritongym options from verl's ``algorithm`` config: ``norm_adv_by_std_in_grpo`` for grpo,
    ``gamma`` for the multi-turn estimators (set ``algorithm.gamma=0.4`` for the discounted recipe)."""
    if name == "grpo":
        return {"normalize_std": bool(_option(config, "norm_adv_by_std_in_grpo", True))}
    if name in ("trloo", "discounted", "reinforce"):
        return {"gamma": float(_option(config, "gamma", 1.0))}
    return {}


def verl_estimator(name: str) -> Callable[..., tuple[Tensor, Tensor]]:
    """The function verl's ``compute_advantage`` calls for ``algorithm.adv_estimator=tritongym_<name>``."""
    if name not in ESTIMATORS:
        raise ConfigError(f"no tritongym estimator {name!r} for verl; choose one of: {', '.join(ESTIMATORS)}")

    def estimator(
        token_level_rewards: Tensor,
        response_mask: Tensor,
        index: Sequence[Any] | np.ndarray | None = None,
        config: Any = None,
        **kwargs: Any,
    ) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            return verl_advantages(name, token_level_rewards, response_mask, index, **estimator_options(name, config))

    estimator.__name__ = f"tritongym_{name}"
    estimator.__doc__ = f"tritongym's {name!r} estimator on verl's tensors (see verl_advantages)."
    return estimator


# --- the policy loss --------------------------------------------------------------------------------


def _normalizer(mode: str, mask: Tensor, batch: Mapping[str, Any]) -> float:
    """verl's global denominator of ``mode`` divided by the data-parallel size, for constant-normalizer."""
    dp_size = batch.get("dp_size") or 1
    if mode == "token-mean":
        tokens = batch.get("batch_num_tokens")
        return float(tokens if tokens is not None else mask.sum()) / dp_size
    if mode == "token-sum":
        return 1.0 / dp_size
    sequences = batch.get("global_batch_size")
    sequences = float(sequences if sequences is not None else (mask.sum(dim=1) > 0).sum())
    if mode == "seq-mean-token-sum":
        return sequences / dp_size
    if mode == "seq-mean-token-sum-norm":
        scale = batch.get("loss_scale_factor") or mask.shape[-1]
        return sequences / dp_size * scale
    raise ConfigError(f"unsupported loss_agg_mode {mode!r}")


def verl_policy_loss(
    old_log_prob: Tensor,
    log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    loss_agg_mode: str = "token-mean",
    config: Any = None,
    rollout_is_weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """tritongym's dual-clip PPO loss with verl's policy-loss signature (``actor.policy_loss.loss_mode=
    tritongym_dual_clip``). Clip ranges from ``actor.clip_ratio_low/high`` (``clip_ratio`` when unset),
    the dual clip from ``actor.clip_ratio_c``; aggregation by ``loss_agg_mode`` over verl's global batch
    (``config.global_batch_info``); ``rollout_is_weights`` weight the per-token loss. KL and entropy
    terms stay verl's (``use_kl_loss``, ``entropy_coeff``)."""
    clip = _option(config, "clip_ratio", 0.2)
    batch = _option(config, "global_batch_info", {}) or {}
    mask = response_mask.bool()
    per_sequence = loss_agg_mode == "seq-mean-token-mean"
    settings = PolicyLossConfig(
        clip_low=float(_option(config, "clip_ratio_low", clip)),
        clip_high=float(_option(config, "clip_ratio_high", clip)),
        dual_clip=float(_option(config, "clip_ratio_c", 3.0)),
        aggregation="seq-mean-token-mean" if per_sequence else "constant-normalizer",
        normalizer=None if per_sequence else _normalizer(loss_agg_mode, mask, batch),
    )
    loss, metrics = policy_loss(
        logp=log_prob,
        old_logp=old_log_prob,
        advantages=advantages,
        token_mask=mask,
        config=settings,
        weights=rollout_is_weights,
    )
    if per_sequence:  # ours averages over the local rows; verl over the global non-empty sequences
        sequences = batch.get("global_batch_size")
        sequences = float(sequences if sequences is not None else (mask.sum(dim=1) > 0).sum())
        loss = loss * mask.shape[0] / max(sequences / (batch.get("dp_size") or 1), 1e-8)
    return loss, {
        "actor/pg_clipfrac": metrics["clip_fraction"],
        "actor/pg_clipfrac_lower": metrics["dual_clip_fraction"],
        "actor/approx_kl": metrics["approx_kl"],
    }


# --- registration -----------------------------------------------------------------------------------


def register_with_verl() -> list[str]:
    """Register the estimators (``tritongym_<name>``), the policy loss (``tritongym_dual_clip``) and
    the agent loop (``tritongym_kernel``) with the installed verl; returns the names. Idempotent."""
    try:
        from verl.trainer.ppo import core_algos
    except ImportError as exc:
        raise ConfigError("verl is not installed: pip install 'tritongym[verl]'") from exc
    names = []
    for name in ESTIMATORS:
        registered = f"tritongym_{name}"
        if registered not in core_algos.ADV_ESTIMATOR_REGISTRY:
            core_algos.register_adv_est(registered)(verl_estimator(name))
        names.append(registered)
    core_algos.register_policy_loss(POLICY_LOSS)(verl_policy_loss)
    names.append(POLICY_LOSS)
    try:
        from tritongym.integrations import verl_agent
    except ImportError as exc:  # verl without the agent-loop API
        log.warning("verl's agent loop API is not available (%s): no %s agent loop", exc, AGENT_LOOP)
    else:
        verl_agent.register()
        names.append(AGENT_LOOP)
    return names
