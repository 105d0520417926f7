"""Which samples (or tokens) take part in the update: mismatch rejection sampling (MRS), truncated
importance sampling (TIS) weights, profiling-based rejection sampling (PRS), dynamic sampling.

Per-token tensors are [B, T] with a bool ``token_mask`` marking real (response) tokens; one row is
one sample (one turn). Formulas and sources: docs/algorithms.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tritongym.errors import ConfigError

LOG_RATIO_CLAMP = 20.0
"""|log rho| is clamped to this before exponentiating, so a stray token cannot overflow."""


@dataclass
class MismatchRejection:
    """Outcome of MRS."""

    token_keep: Tensor
    """bool [B, T]: tokens that keep their gradient (always within ``token_mask``)."""
    sample_keep: Tensor
    """bool [B]: samples with at least one kept token."""
    statistic: Tensor
    """The statistic tested against [lower, upper]: [B, T] for token mode, [B] otherwise."""
    vetoed: Tensor
    """bool [B]: samples rejected by the token veto."""

    @property
    def rejected_fraction(self) -> float:
        return float((~self.sample_keep).float().mean()) if self.sample_keep.numel() else 0.0


def _log_ratio(trainer_logp: Tensor, rollout_logp: Tensor, token_mask: Tensor) -> Tensor:
    delta = (trainer_logp - rollout_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return torch.where(token_mask, delta, torch.zeros_like(delta))


def mismatch_rejection(
    trainer_logp: Tensor,
    rollout_logp: Tensor,
    token_mask: Tensor,
    *,
    mode: str = "geometric",
    lower: float = 0.999,
    upper: float = 1.001,
    veto: float | None = 1e-4,
    trajectory: Tensor | None = None,
) -> MismatchRejection:
    """Reject samples whose rollout log-probs disagree with the trainer's (rho = exp(trainer - rollout)).

    Modes: ``token`` keeps each token with lower <= rho <= upper; ``sequence`` tests the product of
    rho over the sample's tokens; ``geometric`` tests exp(mean log rho) over all valid tokens of the
    sample's trajectory (rows sharing a ``trajectory`` id; each row alone if None). ``veto``: a sample
    with any token rho < veto is rejected whatever the statistic.
    """
    token_mask = token_mask.bool()
    log_rho = _log_ratio(trainer_logp, rollout_logp, token_mask)
    vetoed = torch.zeros(token_mask.shape[0], dtype=torch.bool)
    if veto is not None:
        vetoed = ((log_rho < torch.log(torch.tensor(veto))) & token_mask).any(dim=1)
    if mode == "token":
        statistic = torch.exp(log_rho)
        token_keep = token_mask & (statistic >= lower) & (statistic <= upper) & ~vetoed[:, None]
        return MismatchRejection(token_keep, token_keep.any(dim=1), statistic, vetoed)
    if mode == "sequence":
        statistic = torch.exp(log_rho.sum(dim=1).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    elif mode == "geometric":
        sums, counts = log_rho.sum(dim=1), token_mask.sum(dim=1).to(log_rho.dtype)
        if trajectory is not None:
            index = torch.unique(trajectory.long(), return_inverse=True)[1]
            n = int(index.max()) + 1
            sums = torch.zeros(n, dtype=sums.dtype).index_add_(0, index, sums)[index]
            counts = torch.zeros(n, dtype=counts.dtype).index_add_(0, index, counts)[index]
        statistic = torch.exp(sums / counts.clamp_min(1))
    else:
        raise ConfigError(f"MRS mode must be 'token', 'sequence' or 'geometric', not {mode!r}")
    sample_keep = (statistic >= lower) & (statistic <= upper) & ~vetoed & token_mask.any(dim=1)
    return MismatchRejection(token_mask & sample_keep[:, None], sample_keep, statistic, vetoed)


def truncated_importance_weights(
    trainer_logp: Tensor, rollout_logp: Tensor, token_mask: Tensor, *, level: str = "token", cap: float = 2.0
) -> Tensor:
    """TIS: min(rho, cap) per token, or min(prod rho, cap) per sample broadcast to its tokens.

    Detached (a weight, not a path for gradients); 0 on padding.
    """
    token_mask = token_mask.bool()
    log_rho = _log_ratio(trainer_logp.detach(), rollout_logp, token_mask)
    if level == "token":
        weights = torch.exp(log_rho).clamp(max=cap)
    elif level == "sequence":
        weights = torch.exp(log_rho.sum(dim=1, keepdim=True).clamp(max=LOG_RATIO_CLAMP)).clamp(max=cap)
        weights = weights.expand_as(log_rho)
    else:
        raise ConfigError(f"TIS level must be 'token' or 'sequence', not {level!r}")
    return weights * token_mask


def profiling_keep_probability(coverage: Tensor, *, threshold: float = 0.3, band: float = 0.1) -> Tensor:
    """clip((c - threshold) / band, 0, 1): 0 at or below the threshold, 1 from threshold + band."""
    if band <= 0:
        raise ConfigError(f"band must be positive, not {band}")
    return ((coverage - threshold) / band).clamp(0.0, 1.0)


def profiling_rejection(
    correct: Tensor,
    coverage: Tensor,
    *,
    threshold: float = 0.3,
    band: float = 0.1,
    speedup: Tensor | None = None,
    keep_if_speedup: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """PRS: keep a correct sample with probability clip((coverage - threshold) / band, 0, 1), so
    "lazy" kernels that leave the work to PyTorch rarely train the policy. Incorrect samples are
    always kept (their low reward is signal). With ``keep_if_speedup`` a correct sample at least that
    fast is kept whatever its coverage. A NaN coverage (not measured) keeps the sample.
    Returns bool [N]. Pass a seeded ``generator`` for reproducibility."""
    correct = correct.bool()
    probability = profiling_keep_probability(torch.nan_to_num(coverage, nan=1.0), threshold=threshold, band=band)
    draw = torch.rand(coverage.shape, generator=generator, dtype=probability.dtype)
    keep = ~correct | (draw < probability)
    if keep_if_speedup is not None:
        if speedup is None:
            raise ConfigError("keep_if_speedup needs the samples' speedup")
        keep |= correct & (torch.nan_to_num(speedup, nan=0.0) >= keep_if_speedup)
    return keep


@dataclass
class DynamicSampling:
    keep: Tensor
    """bool [N]: samples of the groups that remain."""
    groups: int
    dropped_uniform: int
    """Groups whose rewards are all equal (std < eps): they have no learning signal."""
    dropped_small: int
    """Groups with fewer than ``min_group_size`` valid samples."""


def dynamic_sampling(
    rewards: Tensor, group: Tensor, *, mask: Tensor | None = None, eps: float = 1e-6, min_group_size: int = 2
) -> DynamicSampling:
    """Drop whole groups that cannot produce a gradient (DAPO's dynamic sampling) and count them."""
    valid = torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask.bool()
    ids, index = torch.unique(group.long(), return_inverse=True)
    n = ids.numel()
    weights = valid.to(rewards.dtype)
    counts = torch.zeros(n, dtype=rewards.dtype).index_add_(0, index, weights)
    mean = torch.zeros(n, dtype=rewards.dtype).index_add_(0, index, rewards * weights) / counts.clamp_min(1)
    sq = torch.zeros(n, dtype=rewards.dtype).index_add_(0, index, (rewards - mean[index]) ** 2 * weights)
    std = torch.sqrt(sq / counts.clamp_min(1))
    small = counts < min_group_size
    uniform = ~small & (std < eps)
    keep_group = ~small & ~uniform
    return DynamicSampling(valid & keep_group[index], n, int(uniform.sum()), int(small.sum()))
