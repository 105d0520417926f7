"""``hf``: a local transformers causal LM as a Policy, with its chat template.

Generation is batched (left padding) through ``model.generate``. Each Completion carries the
prompt's token ids, the sampled token ids and their *behaviour* log-probabilities: the log-softmax of
the logits after the sampling processors, i.e. **with temperature and top-p applied** (a top-p
renormalised distribution, as vLLM's processed log-probs). The trainer's log-probs apply the same
temperature but no top-p truncation; with ``top_p < 1`` that difference shows up as rollout/trainer
mismatch, which MRS/TIS account for. Greedy decoding (temperature 0) reports the raw log-softmax.

A conversation whose last message is from the assistant is a prefill: the template is rendered with
``continue_final_message`` and the completion continues that message (its text excludes the prefill).
The sampled tokens run up to and including the end-of-turn token, or the token that completed a stop
string (the text is cut before the stop string), or ``max_tokens``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from tritongym.errors import ConfigError
from tritongym.policy.base import Completion, Message, SamplingConfig

log = logging.getLogger(__name__)


class HFPolicy:
    """Batched sampling from a transformers causal LM (``model``) with its ``tokenizer``'s chat template."""

    def __init__(
        self, model: Any, tokenizer: Any, name: str = "", batch_size: int = 16, max_prompt_tokens: int | None = None
    ):
        if tokenizer.chat_template is None:
            raise ConfigError("the tokenizer has no chat template; set tokenizer.chat_template")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name or getattr(model.config, "_name_or_path", "") or "hf"
        self.batch_size = batch_size
        """Conversations per ``generate`` call (each with ``n`` samples)."""
        self.max_prompt_tokens = max_prompt_tokens
        """Longer prompts are not generated from: their answers are empty, finish reason ``length``."""
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    def prompt_ids(self, conversation: list[Message]) -> list[int]:
        """The token ids the model continues for ``conversation`` (generation prompt, or the prefill)."""
        return chat_prompt_ids(self.tokenizer, conversation)

    @torch.no_grad()
    def generate(self, conversations: list[list[Message]], sampling: SamplingConfig) -> list[list[Completion]]:
        prompts = [self.prompt_ids(c) for c in conversations]
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        limit = self.max_prompt_tokens
        fits = [i for i, p in enumerate(prompts) if limit is None or len(p) <= limit]
        out: list[list[Completion]] = [
            [Completion(text="", finish_reason="length", prompt_tokens=len(p), prompt_token_ids=list(p))] * sampling.n
            for p in prompts
        ]
        for start in range(0, len(fits), self.batch_size):
            chunk = fits[start : start + self.batch_size]
            for i, samples in zip(chunk, self._generate_batch([prompts[i] for i in chunk], sampling), strict=True):
                out[i] = samples
        return out

    def _generate_batch(self, prompts: list[list[int]], sampling: SamplingConfig) -> list[list[Completion]]:
        pad = self.tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        greedy = sampling.temperature <= 0
        options: dict[str, Any] = {"do_sample": not greedy, "max_new_tokens": sampling.max_tokens}
        if not greedy:
            options |= {"temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
        if sampling.stop:
            options |= {"stop_strings": list(sampling.stop), "tokenizer": self.tokenizer}
        was_training = self.model.training
        self.model.eval()
        try:
            generated = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                num_return_sequences=sampling.n,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=pad,
                eos_token_id=self.tokenizer.eos_token_id,
                **options,
            )
        finally:
            self.model.train(was_training)
        new = generated.sequences[:, width:]
        if new.shape[1]:
            scores = torch.stack(generated.scores, dim=1).float()  # [B*n, steps, V], after the processors
            logprobs = torch.log_softmax(scores, dim=-1).gather(-1, new[..., None])[..., 0]
        else:
            logprobs = new.float()
        results = []
        for i, prompt in enumerate(prompts):
            samples = []
            for j in range(sampling.n):
                row = i * sampling.n + j
                samples.append(self._completion(prompt, new[row].tolist(), logprobs[row].tolist(), sampling))
            results.append(samples)
        return results

    def _completion(self, prompt: list[int], tokens: list[int], logprobs: list[float], sampling) -> Completion:
        eos = self.tokenizer.eos_token_id
        finish = "length"
        if eos in tokens:
            tokens = tokens[: tokens.index(eos) + 1]
            finish = "stop"
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cut = _first_stop(text, sampling.stop)
        if cut is not None:
            finish = "stop"
            for end in range(1, len(tokens) + 1):  # the shortest prefix that completes the stop string
                if (
                    _first_stop(self.tokenizer.decode(tokens[:end], skip_special_tokens=True), sampling.stop)
                    is not None
                ):
                    tokens = tokens[:end]
                    break
            text = text[:cut]
        return Completion(
            text=text,
            finish_reason=finish,
            prompt_tokens=len(prompt),
            completion_tokens=len(tokens),
            prompt_token_ids=list(prompt),
            token_ids=tokens,
            logprobs=logprobs[: len(tokens)],
        )


def chat_prompt_ids(tokenizer: Any, conversation: list[Message]) -> list[int]:
    """The chat template's token ids for ``conversation``: with the generation prompt, or, when the last
    message is from the assistant, ending with that message's text (a prefill to continue)."""
    if not conversation:
        raise ConfigError("a conversation needs at least one message")
    prefill = conversation[-1]["role"] == "assistant"
    text = tokenizer.apply_chat_template(
        conversation, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill
    )
    return tokenizer(text, add_special_tokens=False).input_ids


def _first_stop(text: str, stops: tuple[str, ...]) -> int | None:
    found = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(found) if found else None


def check_model_name(name: str, what: str) -> None:
    """Refuse a model named like a path (absolute, ``./``, ``../``, ``~``, or with more than one ``/``:
    a hub name is ORG/NAME) where no such directory is, naming the setting ``what``."""
    if (name.startswith(("/", ".", "~")) or name.count("/") > 1) and not Path(name).expanduser().is_dir():
        raise ConfigError(f"{what} {name}: no such model directory (a hub model is named ORG/NAME)")


HUB_PROBE_TIMEOUT_S = 5.0
"""How long the one request that checks whether the Hugging Face Hub answers may take."""


def hub_unreachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> str | None:
    """Why the Hugging Face Hub cannot be reached (one request, no retries, through huggingface_hub's own
    session: its endpoint and proxies), or None when it answers. transformers retries a network error
    for about 50 s before its own error; this takes one connection attempt."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=timeout)
    except Exception as exc:  # DNS, refused, TLS, proxy, timeout: whatever stops the download stops this
        return f"{constants.ENDPOINT} cannot be reached ({type(exc).__name__}: {exc})"
    return None


def _hub_offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


@contextmanager
def loading(name: str, what: str) -> Iterator[dict[str, Any]]:
    """Loading the model or tokenizer ``name``: yields the keyword arguments of its ``from_pretrained``
    calls, and turns transformers' errors (not a model directory, not a hub model, no network) into a
    ConfigError naming the setting ``what``.

    A name that is no local directory is a hub name: unless HF_HUB_OFFLINE is set, one request first
    checks that the Hub answers; when it does not, the model is looked up in the Hugging Face cache only
    (``local_files_only``), so a machine without network gets its error at once, with the fix."""
    check_model_name(name, what)
    options: dict[str, Any] = {}
    why = None
    if not Path(name).expanduser().is_dir():
        if _hub_offline():
            why = "HF_HUB_OFFLINE is set, so only the Hugging Face cache is looked in"
        else:
            why = hub_unreachable()
        if why is not None:
            options["local_files_only"] = True
    try:
        yield options
    except (OSError, ValueError) as exc:
        if why is None:
            raise ConfigError(
                f"{what} {name}: cannot load it as a local model directory or a hub model ({exc})"
            ) from None
        raise ConfigError(
            f"{what} {name}: no such local directory and not in the Hugging Face cache; {why}. Pass a local "
            f"model directory, or download it where the Hub answers (`hf download {name}`, into HF_HOME's "
            "cache); with HF_HUB_OFFLINE=1 the Hub is never asked"
        ) from None


def load_hf_policy(path: str, dtype: str = "auto", device: str = "auto", what: str = "model", **kwargs) -> HFPolicy:
    """An HFPolicy from a Hugging Face model path or hub name (``what``: the setting named in errors)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with loading(path, what) as hub:
        tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left", **hub)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **hub)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return HFPolicy(model.to(device), tokenizer, name=path, **kwargs)
