import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongym.errors import ConfigError
from tritongym.rl import (
    ADVANTAGES,
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

T = torch.tensor


def close(a, b):
    torch.testing.assert_close(a, T(b, dtype=a.dtype), atol=1e-6, rtol=1e-6)


def test_registry_names_every_estimator():
    assert ADVANTAGES.names() == ["discounted", "grpo", "reinforce", "rloo", "trloo"]
    with pytest.raises(ConfigError, match="unknown advantage estimator 'ppo'; choose one of: discounted"):
        compute_advantages("ppo", T([1.0]), T([0]))


def test_grpo_by_hand():
    rewards, group = T([1.0, 0.0, 0.0, 1.0, 3.0]), T([0, 0, 0, 0, 1])
    close(grpo(rewards, group, normalize_std=False), [0.5, -0.5, -0.5, 0.5, 0.0])
    std = (4 * 0.25 / 3) ** 0.5  # unbiased std of [1, 0, 0, 1]
    close(grpo(rewards, group, eps=0.0), [0.5 / std, -0.5 / std, -0.5 / std, 0.5 / std, 0.0])


def test_grpo_uniform_group_gets_zero_not_nan():
    close(grpo(T([2.0, 2.0]), T([0, 0])), [0.0, 0.0])


def test_rloo_by_hand():
    close(rloo(T([1.0, 0.0, 0.0, 1.0]), T([0, 0, 0, 0])), [2 / 3, -2 / 3, -2 / 3, 2 / 3])
    close(rloo(T([5.0]), T([0])), [5.0])  # group of one: baseline 0


def test_trloo_multi_turn_by_hand():
    # prompt 0, trajectories 0 and 1 with two turns each: rewards [0, 1] and [0, 0]
    rewards = T([0.0, 1.0, 0.0, 0.0])
    group, traj, turn = T([0, 0, 0, 0]), T([0, 0, 1, 1]), T([0, 1, 0, 1])
    # returns (gamma 1): [1, 1] and [0, 0]; groups (p0,t0)=[1,0], (p0,t1)=[1,0]
    close(trloo(rewards, group, trajectory=traj, turn=turn), [1.0, 1.0, -1.0, -1.0])
    # gamma 0.5: returns [0.5, 1] and [0, 0]
    close(trloo(rewards, group, trajectory=traj, turn=turn, gamma=0.5), [0.5, 1.0, -0.5, -1.0])


def test_returns_to_go_with_gaps_and_masks():
    rewards = T([1.0, 2.0, 4.0, 8.0])
    traj, turn = T([7, 7, 7, 3]), T([0, 1, 3, 0])
    close(returns_to_go(rewards, traj, turn, gamma=0.5), [1 + 1 + 0.5, 2 + 0.25 * 4, 4.0, 8.0])
    masked = T([True, False, True, True])
    close(returns_to_go(rewards, traj, turn, 0.5, masked), [1 + 0.125 * 4, 0.0, 4.0, 8.0])
    with pytest.raises(ConfigError, match="each turn must appear once"):
        returns_to_go(rewards, T([0, 0, 1, 1]), T([0, 0, 0, 1]))


def test_meaningful_turn_mask_drops_non_improving_turns_after_success():
    rewards = T([1.0, 0.0, -0.5, 0.0, 0.7, 0.0])
    traj, turn = T([0, 0, 0, 1, 1, 1]), T([0, 1, 2, 0, 1, 2])
    assert meaningful_turn_mask(rewards, traj, turn).tolist() == [True, False, False, True, True, False]


def test_trloo_meaningful_turns_option():
    rewards = T([1.0, 0.0, 0.0, 0.0])
    group, traj, turn = T([0, 0, 0, 0]), T([0, 0, 1, 1]), T([0, 1, 0, 1])
    on = trloo(rewards, group, trajectory=traj, turn=turn)
    off = trloo(rewards, group, trajectory=traj, turn=turn, meaningful_turns=False)
    # masked turn (traj 0, turn 1) gets 0 and leaves the (p0, t1) group with one peer: baseline 0
    close(on, [1.0, 0.0, -1.0, 0.0])
    close(off, [1.0, 0.0, -1.0, 0.0])
    assert on[1] == 0 and off[1] == 0
    with pytest.raises(ConfigError, match="needs `trajectory` and `turn`"):
        trloo(rewards, group)


def test_discounted_with_and_without_baseline():
    rewards = T([0.0, 1.0, 0.0, 0.0])
    group, traj, turn = T([0, 0, 0, 0]), T([0, 0, 1, 1]), T([0, 1, 0, 1])
    close(discounted(rewards, group, trajectory=traj, turn=turn, baseline="none"), [0.4, 1.0, 0.0, 0.0])
    close(discounted(rewards, group, trajectory=traj, turn=turn), [0.2, 0.5, -0.2, -0.5])
    with pytest.raises(ConfigError, match="baseline must be"):
        discounted(rewards, group, trajectory=traj, turn=turn, baseline="median")


def test_reinforce_has_no_baseline():
    close(reinforce(T([1.0, 3.0]), T([0, 0])), [1.0, 3.0])
    close(reinforce(T([1.0, 3.0]), T([0, 0]), trajectory=T([0, 0]), turn=T([0, 1])), [4.0, 3.0])


def test_rejected_samples_count_in_the_baseline_by_default():
    rewards, group, keep = T([1.0, 0.0, 0.0]), T([0, 0, 0]), T([True, True, False])
    close(advantages_with_rejection("rloo", rewards, group, keep), [1.0, -0.5, 0.0])
    close(advantages_with_rejection("rloo", rewards, group, keep, rejected_in_baseline=False), [1.0, -1.0, 0.0])


reward = st.floats(-10, 10, allow_nan=False, width=32)
groups = st.lists(reward, min_size=2, max_size=12)
prompts_of_pairs = st.lists(st.lists(reward, min_size=4, max_size=12), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(groups)
def test_rloo_sums_to_zero_and_grpo_is_shrunk_rloo(values):
    rewards = T(values, dtype=torch.float64)
    group = torch.zeros(len(values), dtype=torch.long)
    a_rloo = rloo(rewards, group)
    assert abs(float(a_rloo.sum())) < 1e-9
    n = len(values)
    torch.testing.assert_close(grpo(rewards, group, normalize_std=False), (n - 1) / n * a_rloo)


@settings(max_examples=60, deadline=None)
@given(prompts_of_pairs, st.floats(0.1, 1.0))
def test_trloo_sums_to_zero_per_prompt_and_turn(prompts, gamma):
    # each prompt has len(values)//2 >= 2 trajectories of two turns
    rewards, group, traj, turn = [], [], [], []
    for p, values in enumerate(prompts):
        for k in range(len(values) // 2):
            for t in range(2):
                rewards.append(values[2 * k + t])
                group.append(p)
                traj.append(p * 100 + k)
                turn.append(t)
    args = [T(x) for x in (group, traj, turn)]
    adv = trloo(T(rewards, dtype=torch.float64), args[0], trajectory=args[1], turn=args[2], gamma=gamma,
                meaningful_turns=False)  # fmt: skip
    for p in range(len(prompts)):
        for t in range(2):
            sel = (args[0] == p) & (args[2] == t)
            assert abs(float(adv[sel].sum())) < 1e-8


@settings(max_examples=40, deadline=None)
@given(groups, st.data())
def test_masked_samples_get_zero_and_do_not_move_the_others(values, data):
    rewards = T(values, dtype=torch.float64)
    n = len(values)
    group = torch.zeros(n, dtype=torch.long)
    mask = T(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    changed = torch.where(mask, rewards, rewards + 100.0)
    for name in ("grpo", "rloo", "reinforce"):
        a = compute_advantages(name, rewards, group, mask=mask)
        b = compute_advantages(name, changed, group, mask=mask)
        assert bool((a[~mask] == 0).all())
        torch.testing.assert_close(a, b)


def test_meaningful_turn_mask_scales_to_large_batches():
    n = 300_000  # a pairwise (n x n) formulation would need 90 GB here
    traj = torch.arange(n) // 3
    turn = torch.arange(n) % 3
    rewards = torch.where(turn == 0, 1.0, 0.0)
    mask = meaningful_turn_mask(rewards, traj, turn)
    assert int(mask.sum()) == n // 3 and bool(mask[turn == 0].all())
