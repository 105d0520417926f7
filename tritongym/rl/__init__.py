"""RL algorithms as small pure tensor functions, registered by name (see docs/algorithms.md)."""

from tritongym.rl.advantages import (
    advantages_with_rejection,
    compute_advantages,
    discounted,
    grpo,
    meaningful_turn_mask,
    reinforce,
    returns_to_go,
    rloo,
    trloo,
)
from tritongym.rl.filters import (
    dynamic_sampling,
    mismatch_rejection,
    profiling_keep_probability,
    profiling_rejection,
    truncated_importance_weights,
)
from tritongym.rl.losses import PolicyLossConfig, kl_penalty, policy_loss
from tritongym.rl.registry import ADVANTAGES, AGGREGATIONS, register_advantage, register_aggregation

__all__ = [
    "ADVANTAGES",
    "AGGREGATIONS",
    "PolicyLossConfig",
    "advantages_with_rejection",
    "compute_advantages",
    "discounted",
    "dynamic_sampling",
    "grpo",
    "kl_penalty",
    "meaningful_turn_mask",
    "mismatch_rejection",
    "policy_loss",
    "profiling_keep_probability",
    "profiling_rejection",
    "register_advantage",
    "register_aggregation",
    "reinforce",
    "returns_to_go",
    "rloo",
    "trloo",
    "truncated_importance_weights",
]
