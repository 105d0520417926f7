import math

import pytest
import torch

from tritongym.errors import ConfigError
from tritongym.rl import (
    dynamic_sampling,
    mismatch_rejection,
    profiling_keep_probability,
    profiling_rejection,
    truncated_importance_weights,
)

T = torch.tensor


def _logps(deltas):
    rollout = torch.full((len(deltas), len(deltas[0])), -1.0)
    return rollout + T(deltas), rollout


def test_geometric_mrs_by_hand():
    trainer, rollout = _logps([[0.0] * 10, [0.01] + [0.0] * 9, [0.02, 0.0, -0.02, 0.0] + [0.0] * 6])
    mask = torch.ones(3, 10, dtype=torch.bool)
    out = mismatch_rejection(trainer, rollout, mask)
    torch.testing.assert_close(out.statistic, T([1.0, math.exp(0.001), 1.0]))
    assert out.sample_keep.tolist() == [True, False, True]  # exp(0.001) = 1.0010005 > 1.001
    assert out.token_keep.sum() == 10 * int(out.sample_keep.sum())


def test_geometric_mrs_rejects_a_drifting_sample_and_pools_a_trajectory():
    trainer, rollout = _logps([[0.02] * 4, [0.0] * 4])
    mask = torch.ones(2, 4, dtype=torch.bool)
    assert mismatch_rejection(trainer, rollout, mask).sample_keep.tolist() == [False, True]
    pooled = mismatch_rejection(trainer, rollout, mask, trajectory=T([0, 0]), upper=1.02)
    torch.testing.assert_close(pooled.statistic, torch.full((2,), math.exp(0.01)))
    assert pooled.sample_keep.tolist() == [True, True]


def test_padding_is_ignored():
    trainer, rollout = _logps([[0.0, 0.0, 5.0]])
    mask = T([[True, True, False]])
    out = mismatch_rejection(trainer, rollout, mask, mode="sequence")
    assert out.sample_keep.tolist() == [True] and out.token_keep.tolist() == [[True, True, False]]


def test_token_veto_rejects_only_its_turn():
    trainer, rollout = _logps([[0.0, math.log(1e-5), 0.0], [0.0, 0.0, 0.0]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    out = mismatch_rejection(trainer, rollout, mask, lower=0.0, upper=10.0, trajectory=T([0, 0]))
    assert out.vetoed.tolist() == [True, False] and out.sample_keep.tolist() == [False, True]
    assert out.rejected_fraction == 0.5


def test_token_and_sequence_modes():
    trainer, rollout = _logps([[0.0, 0.1, 0.0], [0.0004, 0.0004, 0.0]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    token = mismatch_rejection(trainer, rollout, mask, mode="token")
    assert token.token_keep.tolist() == [[True, False, True], [True, True, True]]
    seq = mismatch_rejection(trainer, rollout, mask, mode="sequence")
    torch.testing.assert_close(seq.statistic, T([math.exp(0.1), math.exp(0.0008)]))
    assert seq.sample_keep.tolist() == [False, True]
    with pytest.raises(ConfigError, match="MRS mode"):
        mismatch_rejection(trainer, rollout, mask, mode="median")


def test_tis_weights_are_capped_and_detached():
    trainer, rollout = _logps([[math.log(3.0), math.log(0.5), 0.0]])
    trainer.requires_grad_(True)
    mask = T([[True, True, False]])
    w = truncated_importance_weights(trainer, rollout, mask, cap=2.0)
    torch.testing.assert_close(w, T([[2.0, 0.5, 0.0]]))
    assert not w.requires_grad
    seq = truncated_importance_weights(trainer, rollout, mask, level="sequence", cap=2.0)
    torch.testing.assert_close(seq, T([[1.5, 1.5, 0.0]]))


def test_prs_keep_probability_and_sampling():
    torch.testing.assert_close(profiling_keep_probability(T([0.2, 0.3, 0.35, 0.4, 0.9])), T([0.0, 0.0, 0.5, 1.0, 1.0]))
    n = 20000
    correct = torch.ones(n, dtype=torch.bool)
    keep = profiling_rejection(correct, torch.full((n,), 0.35), generator=torch.Generator().manual_seed(0))
    assert abs(keep.float().mean().item() - 0.5) < 0.02
    again = profiling_rejection(correct, torch.full((n,), 0.35), generator=torch.Generator().manual_seed(0))
    assert torch.equal(keep, again)


def test_prs_keeps_incorrect_unmeasured_and_fast_samples():
    correct = T([False, True, True, True])
    coverage = T([0.0, 0.0, float("nan"), 0.0])
    speedup = T([1.0, 1.0, 1.0, 2.5])
    assert profiling_rejection(correct, coverage).tolist() == [True, False, True, False]
    fast = profiling_rejection(correct, coverage, speedup=speedup, keep_if_speedup=2.0)
    assert fast.tolist() == [True, False, True, True]
    with pytest.raises(ConfigError, match="needs the samples' speedup"):
        profiling_rejection(correct, coverage, keep_if_speedup=2.0)


def test_dynamic_sampling_drops_flat_and_small_groups():
    rewards = T([1.0, 1.0, 0.0, 1.0, 0.5, 0.2, 0.2])
    group = T([0, 0, 1, 1, 2, 3, 3])
    out = dynamic_sampling(rewards, group)
    assert out.keep.tolist() == [False, False, True, True, False, False, False]
    assert (out.groups, out.dropped_uniform, out.dropped_small) == (4, 2, 1)
    masked = dynamic_sampling(rewards, group, mask=T([True] * 3 + [False] + [True] * 3))
    assert masked.keep.tolist() == [False] * 7 and masked.dropped_small == 2
