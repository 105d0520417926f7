"""A policy that asks any OpenAI-compatible chat-completions server (vLLM, SGLang, TGI, hosted APIs).

Requests go out concurrently (at most ``max_concurrency`` at once) through the ``openai`` client,
whose own retry loop handles connection errors, 408, 409, 429 and 5xx with exponential backoff
(``max_retries``). A request that still fails becomes completions with ``finish_reason="error"``
(never scored); errors that no retry can fix (a wrong key, an unknown model) raise PolicyError at once.
The API key comes from the environment, never from a flag.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from tritongym.errors import ConfigError, PolicyError
from tritongym.policy.base import Completion, Message, SamplingConfig

log = logging.getLogger(__name__)

API_KEY_VARIABLES = ("TRITONGYM_API_KEY", "OPENAI_API_KEY")
"""Environment variables read for the API key, first found wins; servers without auth need none."""


@dataclass(frozen=True)
class OpenAIConfig:
    """Where and how to reach the server."""

    model: str
    """Model name as the server knows it."""
    base_url: str = "http://127.0.0.1:8000/v1"
    """The server's OpenAI API root (ends in /v1 for vLLM and SGLang)."""
    max_concurrency: int = 32
    """Requests in flight at once."""
    timeout_s: float = 600.0
    """Time limit of one request (long answers of reasoning models take minutes)."""
    max_retries: int = 5
    """Retries of a request on connection errors, 408/409/429 and 5xx, with exponential backoff."""
    continue_prefill: bool = True
    """With an assistant prefill, ask the server to continue it (vLLM/SGLang ``continue_final_message``);
    False drops the prefill from the request, for servers that do not support it."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Extra JSON fields of every request (e.g. ``{"top_k": 20}`` for vLLM)."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("the OpenAI policy needs a model name (--model)")
        if self.max_concurrency < 1 or self.timeout_s <= 0 or self.max_retries < 0:
            raise ConfigError("max_concurrency must be >= 1, timeout_s > 0 and max_retries >= 0")


@dataclass
class Usage:
    """What the policy has spent so far."""

    requests: int = 0
    failed: int = 0
    """Requests that still failed after the client's retries."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    """Sum of request wall times."""


def api_key() -> str:
    for name in API_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return "EMPTY"  # vLLM and SGLang accept any key unless started with one


class OpenAIPolicy:
    """The Policy protocol over chat completions. Thread-safe; close() when done."""

    def __init__(self, config: OpenAIConfig):
        import openai

        self.config = config
        self.name = config.model
        self.usage = Usage()
        self._lock = threading.Lock()
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=config.base_url, api_key=api_key(), timeout=config.timeout_s, max_retries=config.max_retries
        )
        self._pool = ThreadPoolExecutor(config.max_concurrency, thread_name_prefix="tritongym-openai")

    def check(self) -> None:
        """Fail early with a clear message when the server cannot be reached or refuses the key."""
        try:
            self._client.with_options(max_retries=1, timeout=min(self.config.timeout_s, 30.0)).models.list()
        except self._openai.APIConnectionError as exc:
            raise PolicyError(f"cannot reach the model server at {self.config.base_url}: {exc}") from None
        except (self._openai.AuthenticationError, self._openai.PermissionDeniedError) as exc:
            names = " or ".join(API_KEY_VARIABLES)
            raise PolicyError(f"{self.config.base_url} refused the API key (set {names}): {exc}") from None
        except self._openai.APIStatusError as exc:  # a server without /models still serves completions
            log.info("%s/models answered %s; going on", self.config.base_url, exc.status_code)

    def generate(self, conversations: list[list[Message]], sampling: SamplingConfig) -> list[list[Completion]]:
        futures = [self._pool.submit(self._one, messages, sampling) for messages in conversations]
        return [f.result() for f in futures]

    def _request(self, messages: list[Message], sampling: SamplingConfig) -> dict[str, Any]:
        extra = dict(self.config.extra_body)
        if messages and messages[-1]["role"] == "assistant":
            if self.config.continue_prefill:
                extra |= {"continue_final_message": True, "add_generation_prompt": False}
            else:
                messages = messages[:-1]
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "n": sampling.n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.stop:
            request["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            request["seed"] = sampling.seed
        if extra:
            request["extra_body"] = extra
        return request

    def _one(self, messages: list[Message], sampling: SamplingConfig) -> list[Completion]:
        start = time.monotonic()
        try:
            response = self._client.chat.completions.create(**self._request(messages, sampling))
        except (
            self._openai.AuthenticationError,
            self._openai.PermissionDeniedError,
            self._openai.NotFoundError,
        ) as exc:
            raise PolicyError(f"{self.config.base_url} refused the request for model {self.name!r}: {exc}") from None
        except self._openai.OpenAIError as exc:
            with self._lock:
                self.usage.requests += 1
                self.usage.failed += 1
                self.usage.seconds += time.monotonic() - start
            error = f"{type(exc).__name__}: {exc}"
            return [Completion(text="", finish_reason="error", error=error) for _ in range(sampling.n)]
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        with self._lock:
            self.usage.requests += 1
            self.usage.prompt_tokens += prompt_tokens
            self.usage.completion_tokens += completion_tokens
            self.usage.seconds += time.monotonic() - start
        choices = sorted(response.choices, key=lambda c: c.index)
        share = completion_tokens // max(len(choices), 1)
        return [
            Completion(
                text=choice.message.content or "",
                finish_reason=choice.finish_reason or "stop",
                prompt_tokens=prompt_tokens,
                completion_tokens=share,
            )
            for choice in choices
        ]

    def usage_dict(self) -> dict[str, Any]:
        with self._lock:
            return asdict(self.usage)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()

    def __enter__(self) -> OpenAIPolicy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
