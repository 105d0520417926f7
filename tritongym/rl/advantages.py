"""Advantage estimators: per-sample rewards -> per-sample advantages.

Every estimator takes the same tensors, one entry per sample (a single-turn completion, or one turn
of a multi-turn trajectory):

* ``rewards``: float [N]; the reward of the sample (of the turn).
* ``group``: long [N]; the prompt the sample answers. Baselines are computed within a group and,
  when ``turn`` is given, within (group, turn).
* ``turn``: long [N] or None; the turn index inside its trajectory (0, 1, ...).
* ``trajectory``: long [N] or None; which trajectory the turn belongs to (returns-to-go sum along it).
* ``mask``: bool [N] or None; False for padding or masked turns. They carry no reward, take no
  part in any baseline or return, and get advantage 0.

Formulas, option names and sources are in docs/algorithms.md.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tritongym.errors import ConfigError
from tritongym.rl.registry import ADVANTAGES, register_advantage


def _valid(rewards: Tensor, mask: Tensor | None) -> Tensor:
    return torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask.bool()


def group_index(group: Tensor, turn: Tensor | None = None) -> Tensor:
    """Dense ids 0..G-1 of the baseline groups: ``group``, or (``group``, ``turn``) pairs."""
    key = group.long() if turn is None else torch.stack([group.long(), turn.long()], dim=1)
    return torch.unique(key, dim=0, return_inverse=True)[1]


def _group_sums(values: Tensor, index: Tensor, valid: Tensor) -> tuple[Tensor, Tensor]:
    """Per-sample (sum over its group, count of its group), counting valid samples only."""
    n_groups = int(index.max()) + 1 if index.numel() else 0
    weights = valid.to(values.dtype)
    sums = torch.zeros(n_groups, dtype=values.dtype).index_add_(0, index, values * weights)
    counts = torch.zeros(n_groups, dtype=values.dtype).index_add_(0, index, weights)
    return sums[index], counts[index]


def leave_one_out_baseline(values: Tensor, index: Tensor, valid: Tensor) -> Tensor:
    """mean_{j != i, same group} values_j; 0 for a group of one."""
    sums, counts = _group_sums(values, index, valid)
    others = counts - 1
    return torch.where(others > 0, (sums - values * valid) / others.clamp_min(1), torch.zeros_like(values))


def returns_to_go(
    rewards: Tensor, trajectory: Tensor, turn: Tensor, gamma: float = 1.0, mask: Tensor | None = None
) -> Tensor:
    """G_t = sum_{t' >= t} gamma^(t' - t) r_t' along each trajectory (valid turns only)."""
    valid = _valid(rewards, mask)
    traj = torch.unique(trajectory.long(), return_inverse=True)[1]
    turn = turn.long()
    if bool((turn < 0).any()):
        raise ConfigError("turn indices must be non-negative")
    n_traj, n_turns = int(traj.max()) + 1, int(turn.max()) + 1
    slot = traj * n_turns + turn
    if torch.unique(slot).numel() != slot.numel():
        raise ConfigError("two samples share one (trajectory, turn): each turn must appear once")
    grid = torch.zeros(n_traj * n_turns, dtype=rewards.dtype).index_put_((slot,), rewards * valid)
    grid = grid.view(n_traj, n_turns)
    out = torch.zeros_like(grid)
    running = torch.zeros(n_traj, dtype=rewards.dtype)
    for t in range(n_turns - 1, -1, -1):
        running = grid[:, t] + gamma * running
        out[:, t] = running
    return out.view(-1)[slot] * valid


def meaningful_turn_mask(
    rewards: Tensor, trajectory: Tensor, turn: Tensor, mask: Tensor | None = None, hack: Tensor | None = None
) -> Tensor:
    """Valid turns, less those with non-positive reward that come after a positive-reward turn of
    the same trajectory (once a kernel is right, later turns that fail to improve teach nothing).
    A turn marked in ``hack`` (its verdict was a hack) is kept whatever came before it: dropped, a
    cheat tried once a kernel was right would cost nothing, and one that went unseen would be paid
    (red team 5 #7)."""
    valid = _valid(rewards, mask)
    traj = torch.unique(trajectory.long(), return_inverse=True)[1]
    turn = turn.long()
    never = torch.iinfo(torch.long).max
    success_turn = torch.where((rewards > 0) & valid, turn, torch.full_like(turn, never))
    first_success = torch.full((int(traj.max()) + 1,), never, dtype=torch.long)
    first_success = first_success.scatter_reduce(0, traj, success_turn, reduce="amin")
    dropped = (turn > first_success[traj]) & (rewards <= 0)
    if hack is not None:
        dropped &= ~hack.bool()
    return valid & ~dropped


def _multi_turn(rewards, trajectory, turn, mask, meaningful_turns: bool, hack: Tensor | None = None) -> Tensor:
    if trajectory is None or turn is None:
        raise ConfigError("this estimator needs `trajectory` and `turn` for multi-turn samples")
    valid = _valid(rewards, mask)
    return meaningful_turn_mask(rewards, trajectory, turn, valid, hack) if meaningful_turns else valid


@register_advantage("grpo")
def grpo(
    rewards: Tensor,
    group: Tensor,
    *,
    turn: Tensor | None = None,
    trajectory: Tensor | None = None,
    mask: Tensor | None = None,
    normalize_std: bool = True,
    eps: float = 1e-6,
) -> Tensor:
    """A_i = r_i - mean(group), divided by std(group) + eps when ``normalize_std`` (GRPO).

    The mean includes r_i itself, so for a group of N the expected gradient is (N-1)/N of the true
    one. std is the unbiased sample std; a group of one gets advantage 0.
    """
    valid = _valid(rewards, mask)
    index = group_index(group, turn)
    sums, counts = _group_sums(rewards, index, valid)
    mean = sums / counts.clamp_min(1)
    advantages = rewards - mean
    if normalize_std:
        sq, _ = _group_sums((rewards - mean) ** 2, index, valid)
        std = torch.sqrt(sq / (counts - 1).clamp_min(1))
        advantages = advantages / (std + eps)
    return torch.where(valid & (counts > 1), advantages, torch.zeros_like(advantages))


@register_advantage("rloo")
def rloo(
    rewards: Tensor,
    group: Tensor,
    *,
    turn: Tensor | None = None,
    trajectory: Tensor | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """A_i = r_i - mean_{j != i} r_j within the group (REINFORCE leave-one-out); group of 1: A = r."""
    valid = _valid(rewards, mask)
    index = group_index(group, turn)
    return (rewards - leave_one_out_baseline(rewards, index, valid)) * valid


@register_advantage("trloo")
def trloo(
    rewards: Tensor,
    group: Tensor,
    *,
    turn: Tensor | None = None,
    trajectory: Tensor | None = None,
    mask: Tensor | None = None,
    gamma: float = 1.0,
    meaningful_turns: bool = True,
    hack: Tensor | None = None,
) -> Tensor:
    """Turn-level leave-one-out: G_t = reward-to-go, groups keyed by (prompt, turn),
    A = N/(N-1) (G - mean G) = G_i - mean_{j != i} G_j. Unbiased for any group size. ``hack``: the
    turns whose verdict was a hack, which ``meaningful_turns`` never drops."""
    valid = _multi_turn(rewards, trajectory, turn, mask, meaningful_turns, hack)
    returns = returns_to_go(rewards, trajectory, turn, gamma, valid)
    index = group_index(group, turn)
    return (returns - leave_one_out_baseline(returns, index, valid)) * valid


@register_advantage("discounted")
def discounted(
    rewards: Tensor,
    group: Tensor,
    *,
    turn: Tensor | None = None,
    trajectory: Tensor | None = None,
    mask: Tensor | None = None,
    gamma: float = 0.4,
    baseline: str = "mean",
    meaningful_turns: bool = True,
    hack: Tensor | None = None,
) -> Tensor:
    """Per-turn discounted return G_t with gamma (0.4 in the multi-turn kernel recipe), minus the
    mean return of its (prompt, turn) group (``baseline="mean"``) or nothing (``"none"``). ``hack``:
    the turns whose verdict was a hack, which ``meaningful_turns`` never drops."""
    if baseline not in ("mean", "none"):
        raise ConfigError(f"baseline must be 'mean' or 'none', not {baseline!r}")
    valid = _multi_turn(rewards, trajectory, turn, mask, meaningful_turns, hack)
    returns = returns_to_go(rewards, trajectory, turn, gamma, valid)
    if baseline == "none":
        return returns
    sums, counts = _group_sums(returns, group_index(group, turn), valid)
    return (returns - sums / counts.clamp_min(1)) * valid


@register_advantage("reinforce")
def reinforce(
    rewards: Tensor,
    group: Tensor,
    *,
    turn: Tensor | None = None,
    trajectory: Tensor | None = None,
    mask: Tensor | None = None,
    gamma: float = 1.0,
) -> Tensor:
    """No baseline: A = r, or the reward-to-go G_t for multi-turn samples."""
    valid = _valid(rewards, mask)
    if trajectory is not None and turn is not None:
        return returns_to_go(rewards, trajectory, turn, gamma, valid)
    return rewards * valid


def compute_advantages(name: str, rewards: Tensor, group: Tensor, **options) -> Tensor:
    """Run the estimator registered as ``name``."""
    return ADVANTAGES.get(name)(rewards, group, **options)


def advantages_with_rejection(
    name: str,
    rewards: Tensor,
    group: Tensor,
    keep: Tensor,
    *,
    rejected_in_baseline: bool = True,
    mask: Tensor | None = None,
    **options,
) -> Tensor:
    """Advantages when some samples were rejected (MRS, PRS): rejected samples get advantage 0.

    With ``rejected_in_baseline`` (default) they still count as peers in their group's baseline:
    their rewards are real outcomes of the policy, and dropping them would bias the baseline
    towards the samples that happened to pass the filter.
    """
    valid = _valid(rewards, mask)
    counted = valid if rejected_in_baseline else valid & keep.bool()
    return compute_advantages(name, rewards, group, mask=counted, **options) * keep.bool()
