"""Exact expectations on a small bandit: GRPO's self-included mean shrinks the gradient by (N-1)/N,
the leave-one-out estimators (rloo, trloo) do not. Computed by enumerating every group of actions."""

import itertools

import pytest
import torch

from tritongym.rl import grpo, rloo, trloo


def expected_gradient(estimator, logits, arm_rewards, n):
    probs = torch.softmax(logits, 0)
    k = len(probs)
    total = torch.zeros(k, dtype=torch.float64)
    group = torch.zeros(n, dtype=torch.long)
    for actions in itertools.product(range(k), repeat=n):
        a = torch.tensor(actions)
        p = probs[a].prod()
        adv = estimator(arm_rewards[a], group)
        score = torch.nn.functional.one_hot(a, k).double() - probs  # d log pi(a) / d logits
        total += p * (adv[:, None] * score).mean(dim=0)
    return total


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_grpo_gradient_is_shrunk_and_leave_one_out_is_exact(n):
    logits = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)
    arm_rewards = torch.tensor([1.0, 0.0, 0.4], dtype=torch.float64)
    probs = torch.softmax(logits, 0)
    true = probs * (arm_rewards - (probs * arm_rewards).sum())  # d E[r] / d logits
    torch.testing.assert_close(expected_gradient(rloo, logits, arm_rewards, n), true)
    single_turn = lambda r, g: trloo(r, g, trajectory=torch.arange(len(r)), turn=torch.zeros_like(g))
    torch.testing.assert_close(expected_gradient(single_turn, logits, arm_rewards, n), true)
    grpo_mean = lambda r, g: grpo(r, g, normalize_std=False)
    torch.testing.assert_close(expected_gradient(grpo_mean, logits, arm_rewards, n), (n - 1) / n * true)
