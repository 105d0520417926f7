"""The trained model: loading (a hub path, a random init from a config, or ``tiny``), LoRA, the
optimizer and schedule, and the log-probabilities of given tokens under the model."""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from torch import Tensor

from tritongym.errors import ConfigError
from tritongym.policy.hf import loading
from tritongym.train.config import ModelSection, OptimSection

log = logging.getLogger(__name__)

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_model_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def load_model(section: ModelSection, seed: int = 0) -> tuple[Any, Any]:
    """(model, tokenizer) as the section says, on its device, LoRA applied when ``lora_rank > 0``."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    dtype = _DTYPES[section.dtype]
    if section.tokenizer:
        with loading(section.tokenizer, "model.tokenizer") as hub:
            tokenizer = AutoTokenizer.from_pretrained(section.tokenizer, padding_side="left", **hub)
    if section.name == "tiny":
        from tritongym.train.tiny import build_tiny_model, build_tiny_tokenizer

        if not section.tokenizer:
            tokenizer = build_tiny_tokenizer()
        model = build_tiny_model(tokenizer, seed=seed, **section.config_overrides)
    else:
        with loading(section.name, "model.name") as hub:
            if not section.tokenizer:
                tokenizer = AutoTokenizer.from_pretrained(section.name, padding_side="left", **hub)
            if section.random_init:
                config = AutoConfig.from_pretrained(section.name, **hub)
                for key, value in section.config_overrides.items():
                    setattr(config, key, value)
                torch.manual_seed(seed)
                model = AutoModelForCausalLM.from_config(config)
            else:
                model = AutoModelForCausalLM.from_pretrained(section.name, dtype=dtype, **hub)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = model.to(device=resolve_model_device(section.device), dtype=dtype)
    if section.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if section.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(seed)
        model = get_peft_model(
            model,
            LoraConfig(
                r=section.lora_rank,
                lora_alpha=section.lora_alpha,
                lora_dropout=section.lora_dropout,
                target_modules=list(section.lora_targets),
                task_type="CAUSAL_LM",
            ),
        )
    model.train()
    return model, tokenizer


def trainable_parameters(model: Any) -> dict[str, Tensor]:
    return {name: p for name, p in model.named_parameters() if p.requires_grad}


def build_optimizer(model: Any, optim: OptimSection, total_steps: int):
    """AdamW over the trainable parameters and a LambdaLR schedule (warmup, then constant/linear/cosine).

    ``total_steps`` counts optimizer steps (for the decaying schedules)."""
    params = list(trainable_parameters(model).values())
    if not params:
        raise ConfigError("the model has no trainable parameters")
    optimizer = torch.optim.AdamW(
        params, lr=optim.lr, betas=tuple(optim.betas), eps=optim.eps, weight_decay=optim.weight_decay
    )

    def factor(step: int) -> float:
        if optim.warmup_steps and step < optim.warmup_steps:
            return (step + 1) / optim.warmup_steps
        if optim.schedule == "constant":
            return 1.0
        progress = min(1.0, (step - optim.warmup_steps) / max(1, total_steps - optim.warmup_steps))
        if optim.schedule == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def token_logprobs(
    model: Any, input_ids: Tensor, attention_mask: Tensor, temperature: float = 1.0, with_entropy: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Log-probabilities of ``input_ids[:, 1:]`` under ``model`` at ``temperature`` ([B, L-1], float32),
    and the entropy of each predicted distribution when asked. Rows are right-padded."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    normalizer = torch.logsumexp(logits, dim=-1)  # no second [B, L, V] tensor unless the entropy is asked
    logp = logits.gather(-1, input_ids[:, 1:, None])[..., 0] - normalizer
    entropy = None
    if with_entropy:
        probs = torch.softmax(logits, dim=-1)
        entropy = normalizer - (probs * logits).sum(-1)
    return logp, entropy
