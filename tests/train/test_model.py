"""LoRA, the schedules, and the KL term's reference policy."""

import math

import pytest
import torch

from tritongym.errors import ConfigError
from tritongym.train.batch import Rows
from tritongym.train.config import ModelSection, OptimSection, load_config
from tritongym.train.model import build_optimizer, load_model, token_logprobs, trainable_parameters
from tritongym.train.step import UpdatePlan, old_logprobs, ppo_update


def _rows(tokenizer, n=2, width=6):
    ids = torch.randint(3, len(tokenizer), (n, width), generator=torch.Generator().manual_seed(0))
    mask = torch.zeros((n, width - 1), dtype=torch.bool)
    mask[:, 2:] = True
    zeros = torch.zeros(n)
    return Rows(
        records=[None] * n,
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        token_mask=mask,
        behaviour_logp=torch.zeros((n, width - 1)),
        rewards=zeros,
        group=zeros.long(),
        trajectory=torch.arange(n),
        turn=zeros.long(),
        correct=zeros.bool(),
        coverage=zeros,
        speedup=zeros,
    )


def test_lora_trains_the_adapter_only_and_kl_uses_the_base_model():
    model, tokenizer = load_model(ModelSection(name="tiny", lora_rank=4, lora_targets=["q_proj", "v_proj"]))
    names = list(trainable_parameters(model))
    assert names and all("lora_" in name for name in names)
    base = {k: v.clone() for k, v in model.named_parameters() if not v.requires_grad}
    config = load_config(overrides=["loss.kl_coef=0.5", "optim.lr=1e-2", "rollout.temperature=0.7"])
    optimizer, _ = build_optimizer(model, config.optim, total_steps=1)
    rows = _rows(tokenizer)
    old, entropy = old_logprobs(model, rows, 0.7, micro_batch_size=1)
    ids, attention = rows.input_ids, rows.attention_mask
    expected, _ = token_logprobs(model.eval(), ids, attention, 0.7)
    assert torch.allclose(old, expected, atol=1e-5) and (entropy[rows.token_mask] > 0).all()
    plan = UpdatePlan(torch.tensor([1.0, -1.0]), rows.token_mask, None, torch.tensor([True, True]))
    for _ in range(3):
        update = ppo_update(model.train(), optimizer, rows, plan, old, config)
    assert update["optimizer_steps"] == 1 and update["kl"] > 0  # the adapter has moved away from the base
    assert all(torch.equal(v, base[k]) for k, v in model.named_parameters() if not v.requires_grad)


def test_schedules():
    model = torch.nn.Linear(2, 2)
    warm = OptimSection(lr=1.0, warmup_steps=2, schedule="linear")
    optimizer, scheduler = build_optimizer(model, warm, total_steps=6)
    lrs = []
    for _ in range(6):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs == pytest.approx([0.5, 1.0, 1.0, 0.75, 0.5, 0.25])
    optimizer, scheduler = build_optimizer(model, OptimSection(lr=1.0, schedule="cosine"), total_steps=4)
    optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    frozen = torch.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(ConfigError, match="no trainable parameters"):
        build_optimizer(frozen, OptimSection(), 1)
