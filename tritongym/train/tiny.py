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


class ForcedPolicy:
    """A Policy whose answers come from a script but whose tokens and behaviour log-probs come from a
    real model, as if it had sampled them: the text is tokenized (plus the end-of-turn token) and
    scored by the model at ``temperature``. It drives the trainer down known paths (a correct kernel,
    a broken one, no code) with a model too small to write any.

    ``script(messages, call)`` returns the answer text; ``call`` counts the answers given so far.
    """

    def __init__(self, model, tokenizer, script, temperature: float = 1.0, name: str = "forced"):
        from tritongym.policy.hf import HFPolicy

        self._hf = HFPolicy(model, tokenizer, name=name)
        self.model, self.tokenizer, self.script = model, tokenizer, script
        self.temperature, self.name, self.calls = temperature, name, 0

    def generate(self, conversations, sampling):
        import torch

        from tritongym.policy.base import Completion

        out = []
        for messages in conversations:
            prompt = self._hf.prompt_ids(messages)
            samples = []
            for _ in range(sampling.n):
                text = self.script(messages, self.calls)
                self.calls += 1
                tokens = [*self.tokenizer(text, add_special_tokens=False).input_ids, self.tokenizer.eos_token_id]
                device = next(self.model.parameters()).device
                with torch.no_grad():
                    logits = self.model(torch.tensor([prompt + tokens], device=device)).logits[0].float()
                logp = torch.log_softmax(logits[len(prompt) - 1 : -1] / self.temperature, dim=-1)
                logprobs = logp.gather(-1, torch.tensor(tokens, device=device)[:, None])[:, 0].tolist()
                samples.append(
                    Completion(
                        text=self.tokenizer.decode(tokens, skip_special_tokens=True),
                        prompt_tokens=len(prompt),
                        completion_tokens=len(tokens),
                        prompt_token_ids=prompt,
                        token_ids=tokens,
                        logprobs=logprobs,
                    )
                )
            out.append(samples)
        return out
