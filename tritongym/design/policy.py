"""The design policy: a small randomly initialised causal LM (Llama architecture, the model class of
real runs) over a word-level vocabulary of problem, design and feedback tokens, as a chat Policy for
the trainer's episode runner.

The model's context is ``<bos>`` + the problem's tokens + ``<design>``; it writes one token per design
slot. :class:`DesignLM` is ``LlamaForCausalLM`` whose logits after ``<design>`` and after each slot's
token are masked to the next slot's allowed values (a table indexed by the current token), so every
completion is a valid design of the space and the log-probabilities the trainer computes from the
model's forward are those of the constrained distribution the policy sampled from.

:class:`DesignPolicy` speaks the episode runner's chat protocol: the first user message is the
problem's name; its answer is the design's tokens on the first line, then the rendered program in a
python code block (what the runner extracts and the environment judges); in later turns the user
message is the evaluation as JSON (the ``json`` feedback style), which becomes the feedback tokens
(verdict, speedup bin, coverage bin) of the next context.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from tritongym.design.language import SLOTS, Design, DesignSpace, design_vocabulary
from tritongym.design.problems import FusionSpec, prompt_vocabulary
from tritongym.design.render import render
from tritongym.errors import ConfigError
from tritongym.evaluate.result import Verdict
from tritongym.policy.base import Completion, Message, SamplingConfig

SPECIALS = ("<pad>", "<bos>", "<design>", "<feedback>")
SPEEDUP_BINS = ((0.5, "lt0.5"), (1.0, "lt1"), (1.2, "lt1.2"), (2.0, "lt2"), (float("inf"), "ge2"))
COVERAGE_BINS = ((0.3, "lt0.3"), (0.7, "lt0.7"), (float("inf"), "ge0.7"))
MASKED = -1e9
"""Logit of a token the next slot does not allow (finite, so entropies stay finite)."""
TEMPLATE = Path(__file__).with_name("design_prompt.txt")
"""The chat template of design episodes: the problem's name, then the evaluation as JSON."""


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


def next_token_table(tokenizer, space: DesignSpace) -> torch.Tensor:
    """bool [V, V]: row t = the tokens allowed after token t. After ``<design>`` the strategies of the
    space, after a slot's token the next slot's values; after any other token (the prompt), all."""
    vocab = len(tokenizer)
    table = torch.ones(vocab, vocab, dtype=torch.bool)
    previous = ["<design>"]
    for slot in SLOTS:
        allowed = torch.zeros(vocab, dtype=torch.bool)
        allowed[tokenizer.convert_tokens_to_ids(space.slot_tokens(slot))] = True
        for token in previous:
            table[tokenizer.convert_tokens_to_ids(token)] = allowed
        previous = [f"{slot}:{value}" for value in space.values[slot]]
    return table


class DesignLM(LlamaForCausalLM):
    """LlamaForCausalLM whose next-token logits are masked by the token they follow (``next_allowed``,
    see :func:`next_token_table`). ``save_pretrained`` writes a plain Llama checkpoint: the mask is a
    buffer, not a weight."""

    def forward(self, input_ids=None, **kwargs):
        out = super().forward(input_ids=input_ids, **kwargs)
        allowed = self.next_allowed.to(out.logits.device)[input_ids]
        out.logits = out.logits.masked_fill(~allowed, MASKED)
        return out


def build_model(tokenizer, shape: ModelShape, space: DesignSpace, seed: int) -> DesignLM:
    """A randomly initialised :class:`DesignLM` sized for ``tokenizer``, constrained to ``space``."""
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
        model = DesignLM(config)
    model.register_buffer("next_allowed", next_token_table(tokenizer, space), persistent=False)
    return model


def design_answer(design: Design, spec: FusionSpec) -> str:
    """The answer text of a design: its tokens, then the rendered program."""
    return f"{design}\n```python\n{render(design, spec)}```\n"


class DesignPolicy:
    """The design model as a chat Policy (tritongym.policy.base.Policy), with token ids and behaviour
    log-probs for the trainer. ``specs`` maps each problem name to its spec; ``small`` picks the
    shape buckets of the problems' small (CPU) sizes; ``ops`` false leaves the elementwise ops out of
    the problem's tokens."""

    def __init__(self, model, tokenizer, specs: Mapping[str, FusionSpec], small: bool, name: str = "design",
                 ops: bool = True):  # fmt: skip
        self.model, self.tokenizer, self.specs, self.small, self.name = model, tokenizer, dict(specs), small, name
        self.ops = ops
        """Whether the problem's tokens include its elementwise ops."""

    def ids(self, tokens: Sequence[str]) -> list[int]:
        return self.tokenizer.convert_tokens_to_ids(list(tokens))

    def spec(self, conversation: Sequence[Message]) -> FusionSpec:
        """The problem of a design conversation (its first user message is the problem's name)."""
        name = next((m["content"].strip() for m in conversation if m["role"] == "user"), "")
        if name not in self.specs:
            raise ConfigError(f"a design conversation starts with a problem's name, not {name[:60]!r}")
        return self.specs[name]

    def context(self, conversation: Sequence[Message]) -> list[str]:
        """The tokens of a design conversation: problem, then each earlier design and its feedback."""
        users = [m["content"] for m in conversation if m["role"] == "user"]
        answers = [m["content"] for m in conversation if m["role"] == "assistant"]
        if len(answers) != len(users) - 1:
            raise ConfigError("a design conversation is the problem's name, then (answer, JSON feedback) pairs")
        tokens = ["<bos>", *self.spec(conversation).prompt_tokens(self.small, self.ops), "<design>"]
        for answer, feedback in zip(answers, users[1:], strict=True):
            tokens += [*answer.splitlines()[0].split(), *feedback_tokens(json.loads(feedback)), "<design>"]
        return tokens

    @torch.no_grad()
    def generate(self, conversations: list[list[Message]], sampling: SamplingConfig) -> list[list[Completion]]:
        contexts = [self.ids(self.context(c)) for c in conversations for _ in range(sampling.n)]
        tokens, logprobs = self.sample(contexts, sampling.temperature)
        out = []
        for i, conversation in enumerate(conversations):
            spec = self.spec(conversation)
            samples = []
            for j in range(i * sampling.n, (i + 1) * sampling.n):
                design = Design.from_tokens(self.tokenizer.convert_ids_to_tokens(tokens[j]))
                samples.append(
                    Completion(
                        text=design_answer(design, spec),
                        prompt_tokens=len(contexts[j]),
                        completion_tokens=len(SLOTS),
                        prompt_token_ids=contexts[j],
                        token_ids=tokens[j],
                        logprobs=logprobs[j],
                    )
                )
            out.append(samples)
        return out

    def sample(self, contexts: list[list[int]], temperature: float) -> tuple[list[list[int]], list[list[float]]]:
        """One design per context (token ids and their log-probs at ``temperature``; greedy at 0)."""
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        running = [list(c) for c in contexts]
        chosen_logp: list[list[float]] = [[] for _ in contexts]
        try:
            for _ in SLOTS:
                width = max(len(r) for r in running)
                ids = torch.full((len(running), width), self.tokenizer.pad_token_id, dtype=torch.long)
                attention = torch.zeros_like(ids)
                for row, r in enumerate(running):  # right-padded, as the trainer's rows
                    ids[row, : len(r)] = torch.tensor(r)
                    attention[row, : len(r)] = 1
                logits = self.model(input_ids=ids.to(device), attention_mask=attention.to(device)).logits.float()
                last = logits[torch.arange(len(running)), torch.tensor([len(r) - 1 for r in running])].cpu()
                if temperature > 0:
                    logp = torch.log_softmax(last / temperature, -1)
                    picked = torch.multinomial(logp.exp(), 1)[:, 0]
                else:
                    logp = torch.log_softmax(last, -1)
                    picked = last.argmax(-1)
                for row, token in enumerate(picked.tolist()):
                    running[row].append(token)
                    chosen_logp[row].append(float(logp[row, token]))
        finally:
            self.model.train(was_training)
        return [r[-len(SLOTS) :] for r in running], chosen_logp

    def greedy(self, spec: FusionSpec) -> Design:
        """The most likely design for ``spec`` (first turn)."""
        context = self.ids(["<bos>", *spec.prompt_tokens(self.small, self.ops), "<design>"])
        (tokens,), _ = self.sample([context], 0.0)
        return Design.from_tokens(self.tokenizer.convert_ids_to_tokens(tokens))
