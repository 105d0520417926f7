"""Policy-gradient losses: PPO's clipped surrogate with asymmetric and dual clipping, an optional KL
penalty to a reference policy, an entropy bonus, and the ways to average over tokens.

Per-token tensors are [B, T]; ``token_mask`` marks response tokens; advantages are [B] (one per
sample, broadcast to its tokens) or [B, T]. Formulas and sources: docs/algorithms.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tritongym.config_doc import documented
from tritongym.errors import ConfigError
from tritongym.rl.registry import AGGREGATIONS, register_aggregation


@register_aggregation("token-mean")
def token_mean(values: Tensor, mask: Tensor, normalizer: float | None = None) -> Tensor:
    """Mean over all valid tokens of the batch (long answers weigh more)."""
    return (values * mask).sum() / mask.sum().clamp_min(1)


@register_aggregation("seq-mean-token-sum")
def seq_mean_token_sum(values: Tensor, mask: Tensor, normalizer: float | None = None) -> Tensor:
    """Sum over each sample's tokens, then mean over samples."""
    return (values * mask).sum(dim=1).mean()


@register_aggregation("seq-mean-token-mean")
def seq_mean_token_mean(values: Tensor, mask: Tensor, normalizer: float | None = None) -> Tensor:
    """Mean over each sample's tokens, then mean over samples (every sample weighs the same)."""
    return ((values * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1)).mean()


@register_aggregation("constant-normalizer")
def constant_normalizer(values: Tensor, mask: Tensor, normalizer: float | None = None) -> Tensor:
    """Sum over all valid tokens divided by a constant (e.g. batch size x max response length), so
    the loss does not depend on how long the answers happen to be (Dr. GRPO)."""
    if normalizer is None or normalizer <= 0:
        raise ConfigError("aggregation 'constant-normalizer' needs a positive `normalizer`")
    return (values * mask).sum() / normalizer


def kl_penalty(logp: Tensor, ref_logp: Tensor, estimator: str = "k3") -> Tensor:
    """Per-token estimate of KL(pi || pi_ref) from samples of pi: k1 = log(pi/pi_ref),
    k3 = pi_ref/pi - log(pi_ref/pi) - 1 (non-negative, low variance)."""
    log_ratio = ref_logp - logp
    if estimator == "k1":
        return -log_ratio
    if estimator == "k3":
        log_ratio = log_ratio.clamp(-20.0, 20.0)
        return torch.exp(log_ratio) - log_ratio - 1
    raise ConfigError(f"KL estimator must be 'k1' or 'k3', not {estimator!r}")


@dataclass(frozen=True)
class PolicyLossConfig:
    """Settings of :func:`policy_loss`. ``field_help(PolicyLossConfig, name)`` returns a field's documentation."""

    clip_low: float = documented("Ratio lower clip: 1 - clip_low.", default=0.2)
    clip_high: float = documented(
        'Ratio upper clip: 1 + clip_high (asymmetric, "clip-higher", keeps exploration alive).', default=0.28
    )
    dual_clip: float | None = documented(
        "For negative advantages, cap the loss at dual_clip * |A| (None: off).", default=3.0
    )
    aggregation: str = documented(
        "How token losses become one number: token-mean, seq-mean-token-sum, seq-mean-token-mean, constant-normalizer.",
        default="token-mean",
    )
    normalizer: float | None = documented("The constant of the constant-normalizer aggregation.", default=None)
    kl_coef: float = documented(
        "Weight of the KL penalty to the reference policy (needs ref_logp when > 0).", default=0.0
    )
    kl_estimator: str = documented("KL estimator: k1 or k3 (see kl_penalty).", default="k3")
    entropy_coef: float = documented("Weight of the entropy bonus (needs entropy when > 0).", default=0.0)

    def __post_init__(self) -> None:
        if not (0 <= self.clip_low < 1 and self.clip_high >= 0):
            raise ConfigError("need 0 <= clip_low < 1 and clip_high >= 0")
        if self.dual_clip is not None and self.dual_clip <= 1:
            raise ConfigError(f"dual_clip must be > 1, not {self.dual_clip}")
        AGGREGATIONS.get(self.aggregation)


def policy_loss(
    *,
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    token_mask: Tensor,
    config: PolicyLossConfig = PolicyLossConfig(),
    ref_logp: Tensor | None = None,
    entropy: Tensor | None = None,
    weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """The PPO surrogate loss to minimise, and its metrics.

    Every argument is keyword-only: the current and the old log-probabilities have the same shape
    and type, and libraries order them differently (verl passes the old one first).

    ``weights`` (e.g. TIS weights, or a rejection mask as 0/1) multiply the per-token policy loss.
    Metrics: clip_fraction (tokens whose clipped branch is active), dual_clip_fraction, approx_kl
    (k3 between the old and current policy), entropy, kl (to the reference).
    """
    mask = token_mask.to(logp.dtype)
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logp)
    advantages = advantages.detach()
    log_ratio = (logp - old_logp.detach()).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - config.clip_low, 1 + config.clip_high)
    loss = torch.maximum(unclipped, clipped)
    dual = torch.zeros_like(loss, dtype=torch.bool)
    if config.dual_clip is not None:
        cap = -advantages * config.dual_clip  # positive where A < 0
        dual = (advantages < 0) & (loss > cap)
        loss = torch.where(dual, cap, loss)
    if weights is not None:
        loss = loss * weights.detach()
    aggregate = AGGREGATIONS.get(config.aggregation)
    total = aggregate(loss, mask, config.normalizer)
    n = mask.sum().clamp_min(1)
    metrics = {
        "clip_fraction": float(((clipped > unclipped) * mask).sum() / n),
        "dual_clip_fraction": float((dual * mask).sum() / n),
        "approx_kl": float((kl_penalty(logp.detach(), old_logp.detach(), "k3") * mask).sum() / n),
    }
    if config.kl_coef > 0:
        if ref_logp is None:
            raise ConfigError("kl_coef > 0 needs ref_logp")
        kl = kl_penalty(logp, ref_logp.detach(), config.kl_estimator)
        total = total + config.kl_coef * aggregate(kl, mask, config.normalizer)
        metrics["kl"] = float((kl.detach() * mask).sum() / n)
    if config.entropy_coef > 0:
        if entropy is None:
            raise ConfigError("entropy_coef > 0 needs the per-token entropy")
        total = total - config.entropy_coef * aggregate(entropy, mask, config.normalizer)
    if entropy is not None:
        metrics["entropy"] = float((entropy.detach() * mask).sum() / n)
    metrics["loss"] = float(total.detach())
    return total, metrics
