"""One RL step, readable top to bottom (:func:`rl_step`), and its two pure halves: which samples and
tokens train with which advantages (:func:`plan_update`), and the PPO epochs (:func:`ppo_update`).
"""

from __future__ import annotations

import inspect
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from tritongym.rl import (
    ADVANTAGES,
    PolicyLossConfig,
    advantages_with_rejection,
    dynamic_sampling,
    mismatch_rejection,
    policy_loss,
    profiling_rejection,
    truncated_importance_weights,
)
from tritongym.train.batch import Rows, build_rows
from tritongym.train.config import TrainConfig, loss_config
from tritongym.train.metrics import rollout_metrics
from tritongym.train.model import token_logprobs
from tritongym.train.rollout import RolloutBatch, run_episodes


@dataclass
class UpdatePlan:
    """What the PPO epochs train on."""

    advantages: Tensor
    """float [B]: 0 for rejected samples."""
    loss_mask: Tensor
    """bool [B, T]: answer tokens of kept samples (and, with token-level MRS, kept tokens)."""
    weights: Tensor | None
    """float [B, T]: TIS weights, or None."""
    keep: Tensor
    """bool [B]: samples that train."""
    counts: dict[str, float] = field(default_factory=dict)
    """prs_rejected, mrs_rejected, mrs_vetoed, dynamic_dropped_groups, mrs_statistic_mean."""


def plan_update(rows: Rows, old_logp: Tensor, config: TrainConfig, generator: torch.Generator) -> UpdatePlan:
    """Filters, then advantages, for a batch whose trainer log-probs (before the update) are ``old_logp``.

    1. PRS: correct samples whose profiling coverage is low are kept only with probability
       clip((coverage - threshold) / band, 0, 1) (``filters.prs``).
    2. Dynamic sampling: groups whose episodes all have the same return are dropped (``filters.dynamic_sampling``).
    3. MRS: samples (or tokens) whose behaviour log-probs disagree with the trainer's are rejected.
    4. Advantages by the configured estimator; rejected samples get 0 (and still count in the baselines
       when ``advantage.rejected_in_baseline``).
    5. TIS weights on the kept tokens (``filters.tis``).
    """
    f = config.filters
    has_tokens = rows.token_mask.any(dim=1)
    keep = torch.ones(len(rows), dtype=torch.bool)
    counts: dict[str, float] = {}
    if f.prs:
        prs_keep = profiling_rejection(
            rows.correct,
            rows.coverage,
            threshold=f.prs_threshold,
            band=f.prs_band,
            speedup=rows.speedup,
            keep_if_speedup=f.prs_keep_if_speedup,
            generator=generator,
        )
        counts["prs_rejected"] = float((~prs_keep).sum())
        keep &= prs_keep
    if f.dynamic_sampling:
        episodes, index = torch.unique(rows.trajectory, return_inverse=True)
        returns = torch.zeros(len(episodes)).index_add_(0, index, rows.rewards)
        episode_group = torch.zeros(len(episodes), dtype=torch.long).index_copy_(0, index, rows.group)
        sampled = dynamic_sampling(returns, episode_group)
        counts["dynamic_dropped_groups"] = float(sampled.dropped_uniform + sampled.dropped_small)
        keep &= sampled.keep[index]
    token_keep = rows.token_mask
    if f.mrs != "off":
        mrs = mismatch_rejection(
            old_logp,
            rows.behaviour_logp,
            rows.token_mask,
            mode=f.mrs,
            lower=f.mrs_lower,
            upper=f.mrs_upper,
            veto=f.mrs_veto,
            trajectory=rows.trajectory if f.mrs == "geometric" else None,
        )
        counts["mrs_rejected"] = float((~mrs.sample_keep & has_tokens).sum())
        counts["mrs_vetoed"] = float((mrs.vetoed & has_tokens).sum())
        statistic = mrs.statistic[rows.token_mask] if f.mrs == "token" else mrs.statistic[has_tokens]
        counts["mrs_statistic_mean"] = float(statistic.mean()) if statistic.numel() else 1.0
        keep &= mrs.sample_keep
        token_keep = mrs.token_keep
    keep &= has_tokens
    a = config.advantage
    options = dict(a.options)
    if rows.hack is not None and "hack" in inspect.signature(ADVANTAGES.get(a.estimator)).parameters:
        options["hack"] = rows.hack  # a multi-turn estimator's meaningful turns keep every hack (red team 5 #7)
    advantages = advantages_with_rejection(
        a.estimator,
        rows.rewards,
        rows.group,
        keep,
        rejected_in_baseline=a.rejected_in_baseline,
        turn=rows.turn,
        trajectory=rows.trajectory,
        **options,
    )
    loss_mask = token_keep & keep[:, None]
    weights = None
    if f.tis != "off":
        weights = truncated_importance_weights(old_logp, rows.behaviour_logp, loss_mask, level=f.tis, cap=f.tis_cap)
    return UpdatePlan(advantages, loss_mask, weights, keep, counts)


def microbatch_weight(mask: Tensor, total_tokens: float, total_rows: int, aggregation: str) -> float:
    """The share of a micro-batch in its optimizer step, so that summing the micro-batches' aggregated
    losses times this weight equals the aggregated loss of the whole step's rows."""
    if aggregation == "token-mean":
        return float(mask.sum()) / max(total_tokens, 1.0)
    if aggregation in ("seq-mean-token-sum", "seq-mean-token-mean"):
        return mask.shape[0] / max(total_rows, 1)
    return 1.0


def ppo_update(
    model: Any,
    optimizer: torch.optim.Optimizer,
    rows: Rows,
    plan: UpdatePlan,
    old_logp: Tensor,
    config: TrainConfig,
    ref_model: Any = None,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """PPO epochs over the kept rows in micro-batches; one optimizer step per ``grad_accumulation``
    micro-batches (0: per epoch). Returns averaged loss metrics, the last grad norm, optimizer steps
    and the learning rate used."""
    o, loss_cfg = config.optim, loss_config(config)
    device = next(model.parameters()).device
    trained = torch.nonzero(plan.keep).flatten()
    sums: dict[str, float] = {}
    n_metrics = steps = 0
    grad_norm = 0.0
    for _epoch in range(o.ppo_epochs):
        order = trained[torch.randperm(len(trained), generator=generator)] if len(trained) > 1 else trained
        micro = [order[i : i + o.micro_batch_size] for i in range(0, len(order), o.micro_batch_size)]
        per_step = o.grad_accumulation or max(len(micro), 1)
        for start in range(0, len(micro), per_step):
            group = micro[start : start + per_step]
            every = torch.cat(group) if group else trained[:0]
            total_tokens = float(plan.loss_mask[every].sum())
            optimizer.zero_grad(set_to_none=True)
            for index in group:
                loss, metrics = _microbatch_loss(
                    model, rows, plan, old_logp, index, loss_cfg, config, ref_model, device
                )
                share = microbatch_weight(plan.loss_mask[index], total_tokens, len(every), loss_cfg.aggregation)
                (loss * share).backward()
                for key, value in metrics.items():
                    sums[key] = sums.get(key, 0.0) + value
                n_metrics += 1
            params = [p for p in model.parameters() if p.requires_grad]
            norm = torch.nn.utils.clip_grad_norm_(params, o.grad_clip if o.grad_clip > 0 else float("inf"))
            grad_norm = float(norm)
            optimizer.step()
            steps += 1
    out = {key: value / max(n_metrics, 1) for key, value in sums.items()}
    return out | {"grad_norm": grad_norm, "optimizer_steps": float(steps), "lr": optimizer.param_groups[0]["lr"]}


def _microbatch_loss(
    model, rows: Rows, plan: UpdatePlan, old_logp, index, loss_cfg: PolicyLossConfig, config, ref_model, device
):
    mask = plan.loss_mask[index]
    width = int(rows.attention_mask[index].sum(dim=1).max())  # trim the padding every row of the micro-batch has
    ids = rows.input_ids[index, :width].to(device)
    attention = rows.attention_mask[index, :width].to(device)
    want_entropy = loss_cfg.entropy_coef > 0
    logp, entropy = token_logprobs(model, ids, attention, config.rollout.temperature, with_entropy=want_entropy)
    ref_logp = None
    if loss_cfg.kl_coef > 0:
        with torch.no_grad():
            ref_logp, _ = _reference_logprobs(model, ref_model, ids, attention, config.rollout.temperature)
    cut = width - 1
    return policy_loss(
        logp=logp,
        old_logp=old_logp[index, :cut].to(device),
        advantages=plan.advantages[index].to(device),
        token_mask=mask[:, :cut].to(device),
        config=loss_cfg,
        ref_logp=ref_logp,
        entropy=entropy,
        weights=None if plan.weights is None else plan.weights[index, :cut].to(device),
    )


def _reference_logprobs(model, ref_model, ids, attention, temperature):
    """The reference policy: a frozen copy, or the same model with its LoRA adapter switched off."""
    if ref_model is not None:
        return token_logprobs(ref_model, ids, attention, temperature)
    with model.disable_adapter():
        return token_logprobs(model, ids, attention, temperature)


@torch.no_grad()
def old_logprobs(model: Any, rows: Rows, temperature: float, micro_batch_size: int) -> tuple[Tensor, Tensor]:
    """Trainer log-probs and entropies of every row before the update ([B, L-1], on the CPU)."""
    device = next(model.parameters()).device
    logp = torch.zeros_like(rows.behaviour_logp)
    entropy = torch.zeros_like(rows.behaviour_logp)
    was_training = model.training
    model.eval()  # no dropout: the same function the rollout sampled from
    try:
        for start in range(0, len(rows), micro_batch_size):
            index = torch.arange(start, min(start + micro_batch_size, len(rows)))
            width = int(rows.attention_mask[index].sum(dim=1).max())
            ids = rows.input_ids[index, :width].to(device)
            attention = rows.attention_mask[index, :width].to(device)
            lp, ent = token_logprobs(model, ids, attention, temperature, with_entropy=True)
            logp[index, : width - 1] = lp.cpu()
            entropy[index, : width - 1] = ent.cpu()
    finally:
        model.train(was_training)
    return logp, entropy


def collect(trainer: Any, step: int, generated: threading.Event | None = None) -> RolloutBatch:
    """Step 1, the rollouts of ``step``: episodes with token ids and behaviour log-probs; each answer is
    evaluated by the environment and rewarded turn by turn (the feedback of turn t is the prompt of
    turn t+1). Everything random in it is seeded by (seed, step). ``generated`` is set after each
    generation (the trainer waits for the first one before it changes the weights)."""
    config: TrainConfig = trainer.config
    r = config.rollout
    judged = ", judging them" if trainer.reward.needs_env else ""
    answers = f"{r.prompts_per_step} x {r.samples_per_prompt} answers of up to {r.max_completion_tokens} tokens"
    _phase(trainer, f"step {step}: generating {answers}{judged}")
    torch.manual_seed(trainer.step_seed(step))
    rollout = run_episodes(
        trainer.engine,
        trainer.env,
        trainer.problems_for_step(step),
        samples=config.rollout.samples_per_prompt,
        episode=trainer.episode_config,
        sampling=trainer.sampling,
        reward=trainer.reward,
        eval_config=trainer.eval_config,
        run_id=f"{trainer.run_id}/step-{step}",
        lock=trainer.weights_lock,
        generated=generated,
    )
    trainer.save_records(rollout.episodes, step)
    return rollout


def _phase(trainer: Any, text: str) -> None:
    """Say what the step is doing now (the trainer's progress line and log), where the trainer listens."""
    if (say := getattr(trainer, "phase", None)) is not None:
        say(text)


def rl_step(trainer: Any, step: int, rollout: RolloutBatch | None = None) -> dict[str, float]:
    """One step of RL (``trainer`` holds the model, engine, env and config). ``rollout``: the step's
    episodes when they were collected ahead (one step of staleness), else they are collected here."""
    config: TrainConfig = trainer.config
    started = time.monotonic()
    generator = torch.Generator().manual_seed(trainer.step_seed(step))

    # 1. Rollouts (see collect).
    if rollout is None:
        rollout = collect(trainer, step)

    with trainer.weights_lock:  # no generation while the weights change
        # 2. Rows: one per scored turn with its full context; episodes with infrastructure errors are dropped.
        rows = build_rows(rollout.episodes, trainer.tokenizer.pad_token_id)
        train_started = time.monotonic()
        _phase(trainer, f"step {step}: updating the model on {len(rows)} rows")

        # 3. Trainer log-probs before the update (the PPO ratio's old policy), then the filters and advantages.
        old_logp, entropy = old_logprobs(trainer.model, rows, config.rollout.temperature, config.optim.micro_batch_size)
        plan = plan_update(rows, old_logp, config, generator)

        # 4. PPO epochs over micro-batches, optimizer steps; the rollout engine gets the new weights.
        update = ppo_update(
            trainer.model, trainer.optimizer, rows, plan, old_logp, config, trainer.ref_model, generator
        )
        with warnings.catch_warnings():  # a step where every sample was rejected has no optimizer step
            warnings.filterwarnings("ignore", message=re.escape("Detected call of `lr_scheduler.step()`"))
            trainer.scheduler.step()  # the schedule counts training steps
        trainer.engine.update_weights(trainer.model)

    # 5. Metrics.
    metrics = rollout_metrics(rollout.episodes, config.filters.prs_threshold)
    metrics |= {f"filter/{k}": v for k, v in plan.counts.items()}
    metrics |= {f"train/{k}": v for k, v in update.items()}
    mask = rows.token_mask
    metrics |= {
        "rows": float(len(rows)),
        "rows_trained": float(plan.keep.sum()),
        "infra_dropped_episodes": float(rows.dropped_episodes),
        "infra_dropped_turns": float(rows.dropped_turns),
        "entropy": float(entropy[mask].mean()) if mask.any() else 0.0,
        "rollout_trainer_logp_gap": float((old_logp - rows.behaviour_logp)[mask].abs().mean()) if mask.any() else 0.0,
        "advantage_abs_mean": float(plan.advantages[plan.keep].abs().mean()) if plan.keep.any() else 0.0,
        "time/generate": rollout.seconds["generate"],
        "time/env": rollout.seconds["env"],
        "time/train": time.monotonic() - train_started,
        "time/step": time.monotonic() - started,
    }
    device = next(trainer.model.parameters()).device
    if device.type == "cuda":  # the trainer's own GPU memory (the environment's judges are other processes)
        metrics["memory/peak_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return metrics
