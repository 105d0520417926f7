"""A scripted policy and a loopback server that speaks the OpenAI chat-completions API.

The answers come from a script: a function of the problem (recognised by its reference source in
the first user message) and the turn (the number of user messages before the answer, minus one).
:func:`replay_script` replays the bundled Triton solutions: ``replay`` answers the known solution at
every turn, ``fix`` first answers a broken version of it (``tl.load`` misspelt) and the known solution
once it has had feedback. :class:`ScriptServer` serves any script over HTTP on 127.0.0.1, so the
OpenAI policy, the episode runner and ``tritongym bench`` are exercised end to end over real HTTP.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tritongym.errors import ConfigError
from tritongym.policy.base import Completion, Message, SamplingConfig
from tritongym.problems import Problem

log = logging.getLogger(__name__)

Script = Callable[[Problem, int], str]
"""The answer text for (problem, turn index)."""
SCRIPTS = ("fix", "replay")
NO_SOLUTION = "I cannot write a Triton kernel for this problem."


def break_solution(solution: str) -> str:
    """The solution with its first ``tl.load`` misspelt: it imports, then fails in the kernel."""
    return solution.replace("tl.load(", "tl.lod(", 1)


def replay_script(mode: str = "fix", reasoning: bool = False) -> Script:
    """Answers from each problem's known solution (see the module docstring); ``reasoning`` wraps the
    code in ``...</think><answer>`` as a continuation of a ``<think>`` prefill."""
    if mode not in SCRIPTS:
        raise ConfigError(f"script must be one of {', '.join(SCRIPTS)}, not {mode!r}")

    def script(problem: Problem, turn: int) -> str:
        if not problem.solution:
            return NO_SOLUTION
        code = problem.solution.strip()
        if mode == "fix" and turn == 0:
            code = break_solution(code)
        block = f"```python\n{code}\n```"
        if reasoning:
            return f"The reference is simple enough for one fused kernel.\n</think>\n<answer>\n{block}\n</answer>"
        return f"Here is a Triton version of {problem.entry_point}:\n\n{block}\n"

    return script


def find_turn(messages: Sequence[Message], problems: Sequence[Problem]) -> tuple[Problem | None, int]:
    """The problem whose reference source appears last in the first user message (a one-shot example
    comes before the task), and the turn index."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    if not users:
        return None, 0
    found, where = None, -1
    for problem in problems:
        at = users[0].rfind(problem.source.strip())
        if at > where:
            found, where = problem, at
    return found, len(users) - 1


class ScriptedPolicy:
    """The Policy protocol, answered in-process from a script (no server)."""

    def __init__(self, problems: Sequence[Problem], script: Script, name: str = "scripted"):
        self.problems, self.script, self.name = list(problems), script, name

    def answer(self, messages: Sequence[Message]) -> str:
        problem, turn = find_turn(messages, self.problems)
        return NO_SOLUTION if problem is None else self.script(problem, turn)

    def generate(self, conversations: list[list[Message]], sampling: SamplingConfig) -> list[list[Completion]]:
        out = []
        for messages in conversations:
            text = self.answer(messages)
            prompt = sum(len(m["content"].split()) for m in messages)
            out.append([Completion(text, "stop", prompt, len(text.split())) for _ in range(sampling.n)])
        return out


class ScriptServer:
    """A chat-completions server on loopback that answers from a :class:`ScriptedPolicy`.

    ``errors`` are HTTP status codes answered, in order, to the first requests (e.g. ``(503, 429)``
    to exercise a client's retries). Use as a context manager; ``url`` is the API root (``.../v1``).
    """

    def __init__(self, policy: ScriptedPolicy, errors: Sequence[int] = (), port: int = 0):
        self.policy = policy
        self.requests = 0
        self._errors = list(errors)
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="tritongym-script-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _next_error(self) -> int | None:
        with self._lock:
            self.requests += 1
            return self._errors.pop(0) if self._errors else None

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        n = int(body.get("n") or 1)
        text = self.policy.answer(messages)
        prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
        choice = {"message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
        return {
            "id": f"chatcmpl-script-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.policy.name),
            "choices": [{"index": i, **choice} for i in range(n)],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": n * len(text.split()),
                "total_tokens": prompt + n * len(text.split()),
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.policy.name, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status = server._next_error()
                if status is not None:
                    self._send(status, {"error": {"message": f"scripted error {status}"}})
                    return
                self._send(200, server._completion(body))

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("script server: " + format, *args)

        return Handler

    def start(self) -> ScriptServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> ScriptServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
