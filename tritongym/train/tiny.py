"""A tiny randomly initialised causal LM and a tokenizer trained on the spot: no downloads.

For tests, CPU demos and benchmarks of the machinery (``model = "tiny"`` in a TrainConfig). The
tokenizer is a byte-level BPE trained on a few strings (the bundled problems and solutions by
default) with ChatML special tokens and a ChatML chat template; ``<|im_end|>`` ends a turn (EOS).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML: ``<|im_start|>role\\ncontent<|im_end|>\\n`` per message."""

SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|pad|>")


@functools.cache
def tiny_corpus() -> tuple[str, ...]:
    """The default training text of the tiny tokenizer: bundled problems, their solutions, and the
    tags of the prompt templates."""
    from tritongym.problems import load_bundled

    texts = []
    for problem in load_bundled():
        texts.append(problem.source)
        texts.append(problem.solution or "")
    texts.append("<think> reasoning </think> <answer> ```python\n``` </answer> system user assistant")
    return tuple(texts)


def build_tiny_tokenizer(corpus: Iterable[str] | None = None, vocab_size: int = 512, extra_tokens: Iterable[str] = ()):
    """A PreTrainedTokenizerFast (byte-level BPE) trained on ``corpus``; ``extra_tokens`` become single
    tokens (e.g. ``"</think>"``) so a tiny model can learn to emit them quickly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = list(corpus) if corpus is not None else tiny_corpus()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=None, eos_token="<|im_end|>", pad_token="<|pad|>", padding_side="left"
    )
    if extra := list(extra_tokens):
        fast.add_tokens(extra)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(tokenizer, hidden_size: int = 32, layers: int = 2, heads: int = 4, seed: int = 0):
    """A randomly initialised Llama-architecture causal LM sized for ``tokenizer`` (float32, CPU)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)
