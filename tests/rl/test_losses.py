import pytest
import torch

from tritongym.errors import ConfigError
from tritongym.rl import AGGREGATIONS, PolicyLossConfig, kl_penalty, policy_loss

T = torch.tensor


def _loss(ratio, advantage, **config):
    old = torch.zeros(1, 1)
    logp = torch.log(T([[ratio]])).requires_grad_(True)
    loss, metrics = policy_loss(
        logp=logp,
        old_logp=old,
        advantages=T([advantage]),
        token_mask=torch.ones(1, 1, dtype=torch.bool),
        config=PolicyLossConfig(**config),
    )
    loss.backward()
    return float(loss.detach()), float(logp.grad), metrics


def test_unclipped_region_is_the_policy_gradient():
    loss, grad, metrics = _loss(1.0, 2.0)
    assert loss == pytest.approx(-2.0) and grad == pytest.approx(-2.0)  # d(-A r)/d log r = -A r
    assert metrics["clip_fraction"] == 0.0


def test_asymmetric_clip():
    loss, grad, metrics = _loss(1.5, 1.0)  # above 1 + 0.28: clipped, no gradient
    assert loss == pytest.approx(-1.28) and grad == 0.0 and metrics["clip_fraction"] == 1.0
    loss, grad, _ = _loss(1.25, 1.0)  # inside the high clip
    assert loss == pytest.approx(-1.25) and grad == pytest.approx(-1.25)
    loss, grad, _ = _loss(0.5, -1.0)  # below 1 - 0.2 with A < 0: clipped
    assert loss == pytest.approx(0.8) and grad == 0.0


def test_dual_clip_caps_negative_advantage_losses():
    loss, grad, metrics = _loss(5.0, -1.0)
    assert loss == pytest.approx(3.0) and grad == 0.0 and metrics["dual_clip_fraction"] == 1.0
    loss, _, metrics = _loss(5.0, -1.0, dual_clip=None)
    assert loss == pytest.approx(5.0) and metrics["dual_clip_fraction"] == 0.0
    loss, _, _ = _loss(2.0, -1.0)  # under the cap: ordinary PPO
    assert loss == pytest.approx(2.0)


def test_aggregation_modes_by_hand():
    values = T([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = T([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert float(AGGREGATIONS.get("token-mean")(values, mask)) == pytest.approx(10 / 4)
    assert float(AGGREGATIONS.get("seq-mean-token-sum")(values, mask)) == pytest.approx((6 + 4) / 2)
    assert float(AGGREGATIONS.get("seq-mean-token-mean")(values, mask)) == pytest.approx((2 + 4) / 2)
    assert float(AGGREGATIONS.get("constant-normalizer")(values, mask, 8.0)) == pytest.approx(10 / 8)
    with pytest.raises(ConfigError, match="needs a positive `normalizer`"):
        AGGREGATIONS.get("constant-normalizer")(values, mask)


def test_kl_estimators():
    logp, ref = T([-1.0, -2.0]), T([-1.5, -2.0])
    torch.testing.assert_close(kl_penalty(logp, ref, "k1"), T([0.5, 0.0]))
    r = torch.exp(T(-0.5))
    torch.testing.assert_close(kl_penalty(logp, ref, "k3"), T([float(r + 0.5 - 1), 0.0]))
    assert bool((kl_penalty(torch.randn(100), torch.randn(100), "k3") >= 0).all())


def test_kl_and_entropy_terms_and_their_requirements():
    logp = torch.zeros(1, 2)
    mask = torch.ones(1, 2, dtype=torch.bool)
    config = PolicyLossConfig(kl_coef=0.5, kl_estimator="k1", entropy_coef=0.1)
    common = {"logp": logp, "old_logp": logp, "advantages": T([0.0]), "token_mask": mask}
    loss, metrics = policy_loss(**common, config=config, ref_logp=T([[-1.0, -1.0]]), entropy=T([[2.0, 2.0]]))
    assert float(loss) == pytest.approx(0.5 * 1.0 - 0.1 * 2.0)
    assert metrics["kl"] == pytest.approx(1.0) and metrics["entropy"] == pytest.approx(2.0)
    with pytest.raises(ConfigError, match="needs ref_logp"):
        policy_loss(**common, config=PolicyLossConfig(kl_coef=0.1))
    with pytest.raises(ConfigError, match="per-token entropy"):
        policy_loss(**common, config=PolicyLossConfig(entropy_coef=0.1))


def test_padding_and_weights():
    logp = torch.zeros(2, 2, requires_grad=True)
    mask = T([[True, False], [True, True]])
    loss, _ = policy_loss(
        logp=logp, old_logp=torch.zeros(2, 2), advantages=T([1.0, 2.0]), token_mask=mask,
        weights=T([[1.0, 1.0], [0.0, 1.0]]),
    )  # fmt: skip
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-(1 + 0 + 2) / 3)
    torch.testing.assert_close(logp.grad, T([[-1 / 3, 0.0], [0.0, -2 / 3]]))


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"dual_clip": 0.5}, "dual_clip"), ({"aggregation": "sum"}, "unknown")]
)
def test_bad_config(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        PolicyLossConfig(**kwargs)


def test_log_probabilities_are_keyword_only():
    """verl passes old_logp first; positional arguments would silently swap the ratio."""
    logp = torch.zeros(1, 1)
    with pytest.raises(TypeError):
        policy_loss(logp, logp, T([1.0]), torch.ones(1, 1, dtype=torch.bool))  # type: ignore[misc]
