"""The design policy: a small randomly initialised causal LM (Llama architecture, the model class of
real runs) over a word-level vocabulary of problem, design and feedback tokens.

A prompt is ``<bos>`` + the problem's tokens + ``<design>``; the model then writes one token per design
slot, each drawn from that slot's allowed values only (constrained decoding: every completion is a
valid design). In multi-turn episodes the context grows by the feedback tokens of the previous turn
(verdict, speedup bin, coverage bin) and another ``<design>``. Log-probabilities of a completion are
those of the constrained distribution, the same at sampling and at training time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from tritongym.design.language import SLOTS, DesignSpace, design_vocabulary
from tritongym.design.problems import prompt_vocabulary
from tritongym.evaluate.result import Verdict

SPECIALS = ("<pad>", "<bos>", "<design>", "<feedback>")
SPEEDUP_BINS = ((0.5, "lt0.5"), (1.0, "lt1"), (1.2, "lt1.2"), (2.0, "lt2"), (float("inf"), "ge2"))
COVERAGE_BINS = ((0.3, "lt0.3"), (0.7, "lt0.7"), (float("inf"), "ge0.7"))


def feedback_vocabulary() -> list[str]:
    tokens = [f"verdict:{v.value}" for v in Verdict]
    tokens += ["speedup:none", *(f"speedup:{name}" for _, name in SPEEDUP_BINS)]
    return [*tokens, "coverage:none", *(f"coverage:{name}" for _, name in COVERAGE_BINS)]


def feedback_tokens(result: Mapping[str, Any]) -> list[str]:
    """The previous turn's outcome in tokens: its verdict, speedup bin and coverage bin."""
    speedup, coverage = result.get("speedup"), result.get("coverage")
    s = "none" if speedup is None else next(name for bound, name in SPEEDUP_BINS if speedup < bound)
    c = "none" if coverage is None else next(name for bound, name in COVERAGE_BINS if coverage < bound)
    return ["<feedback>", f"verdict:{result['verdict']}", f"speedup:{s}", f"coverage:{c}"]


def build_tokenizer():
    """A word-level transformers tokenizer whose vocabulary is exactly the language's tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = [*SPECIALS, *prompt_vocabulary(), *design_vocabulary(), *feedback_vocabulary()]
    ids = {token: i for i, token in enumerate(dict.fromkeys(vocab))}
    core = Tokenizer(models.WordLevel(ids, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<design>")


@dataclass(frozen=True)
class ModelShape:
    """Size of the policy's transformer."""

    hidden: int = 64
    """Hidden size."""
    layers: int = 2
    """Decoder layers."""
    heads: int = 4
    """Attention heads."""


def build_model(tokenizer, shape: ModelShape, seed: int):
    """A randomly initialised LlamaForCausalLM sized for ``tokenizer``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=2 * shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.heads,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=None,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


class DesignPolicy:
    """Constrained sampling and scoring of designs with a causal LM."""

    def __init__(self, model, tokenizer, space: DesignSpace):
        self.model, self.tokenizer, self.space = model, tokenizer, space
        vocab = len(tokenizer)
        self.allowed = torch.zeros(len(SLOTS), vocab, dtype=torch.bool)
        """bool [slots, vocab]: the tokens each slot may take."""
        for i, slot in enumerate(SLOTS):
            self.allowed[i, tokenizer.convert_tokens_to_ids(space.slot_tokens(slot))] = True

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def ids(self, tokens: Sequence[str]) -> list[int]:
        return self.tokenizer.convert_tokens_to_ids(list(tokens))

    def _logits(self, contexts: list[list[int]]) -> tuple[Tensor, list[int]]:
        """Logits [B, L, V] of left-padded contexts and the pad width of each."""
        width = max(len(c) for c in contexts)
        pad = self.tokenizer.pad_token_id
        pads = [width - len(c) for c in contexts]
        ids = torch.tensor([[pad] * p + c for p, c in zip(pads, contexts, strict=True)], device=self.device)
        attention = (
            torch.arange(width, device=self.device)[None, :] >= torch.tensor(pads, device=self.device)[:, None]
        ).long()
        positions = (attention.cumsum(1) - 1).clamp_min(0)
        logits = self.model(input_ids=ids, attention_mask=attention, position_ids=positions).logits.float()
        return logits, pads

    @torch.no_grad()
    def sample(self, contexts: list[list[int]], generator: torch.Generator, greedy: bool = False) -> list[list[str]]:
        """One design (its tokens) per context; each context must end with ``<design>``."""
        was_training = self.model.training
        self.model.eval()
        try:
            running = [list(c) for c in contexts]
            for i in range(len(SLOTS)):
                logits, _ = self._logits(running)
                last = logits[:, -1, :].masked_fill(~self.allowed[i].to(logits.device), float("-inf"))
                if greedy:
                    chosen = last.argmax(-1)
                else:
                    probs = torch.softmax(last, -1).cpu()
                    chosen = torch.multinomial(probs, 1, generator=generator)[:, 0]
                for row, token in zip(running, chosen.tolist(), strict=True):
                    row.append(token)
            return [self.tokenizer.convert_ids_to_tokens(r[-len(SLOTS) :]) for r in running]
        finally:
            self.model.train(was_training)

    def logprobs(self, sequences: list[list[int]], starts: list[int]) -> tuple[Tensor, Tensor]:
        """Log-probs [B, slots] of the design tokens at ``sequences[b][starts[b]:starts[b]+slots]`` under
        the constrained distribution, and the per-token entropy [B, slots] of that distribution."""
        logits, pads = self._logits(sequences)
        rows = torch.arange(len(sequences), device=logits.device)[:, None]
        where = torch.tensor([[p + s - 1 + i for i in range(len(SLOTS))] for p, s in zip(pads, starts, strict=True)],
                             device=logits.device)  # fmt: skip
        picked = logits[rows, where]  # [B, slots, V]
        picked = picked.masked_fill(~self.allowed.to(logits.device)[None], float("-inf"))
        logp = torch.log_softmax(picked, -1)
        targets = torch.tensor([seq[s : s + len(SLOTS)] for seq, s in zip(sequences, starts, strict=True)],
                               device=logits.device)  # fmt: skip
        chosen = logp.gather(-1, targets[..., None])[..., 0]
        probs = logp.exp()
        entropy = -(probs * torch.where(probs > 0, logp, torch.zeros_like(logp))).sum(-1)
        return chosen, entropy
