"""Score a batch of model answers through any Env, in input order: what the TRL and verl adapters share.

One answer becomes one :class:`Score`: the code is extracted from the text, every extracted candidate
is submitted to the Env at once (``Env.submit``; the local pool, Ray and the HTTP client all evaluate
them concurrently), and the results are read back in the order the answers came in.

Infrastructure errors (a verdict of ``infrastructure_error``, or an Env whose future raised) are not
the model's doing: their reward is None, and so is the reward of every composition that includes
them (a format bonus is not paid on a sample whose kernel could not be judged).
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tritongym.env.base import Env
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.problems import Problem
from tritongym.rewards import VerifiableReward, weighted_sum
from tritongym.rewards.outcome import NO_CODE, NO_CODE_OUTCOME, is_hack

log = logging.getLogger(__name__)

ENV_VARIABLE = "TRITONGYM_ENV"
"""Where kernels are evaluated when no Env is given (verl's processes, the examples): ``local`` (default:
a local pool on this host's GPUs), ``ray`` (the Ray cluster verl runs on) or an ``http(s)://`` URL of
``tritongym serve`` (token in ``TRITONGYM_TOKEN``)."""

_envs: dict[str, Env] = {}
_envs_lock = threading.Lock()


def env_from_spec(spec: str | None = None) -> Env:
    """The Env of this process for ``spec`` (see :data:`ENV_VARIABLE`), created once and reused."""
    spec = spec or os.environ.get(ENV_VARIABLE) or "local"
    with _envs_lock:
        if spec not in _envs:
            if spec == "local":
                from tritongym.env import LocalEnv

                _envs[spec] = LocalEnv()
            elif spec == "ray":
                from tritongym.env.ray_backend import RayEnv

                _envs[spec] = RayEnv()
            elif spec.startswith(("http://", "https://")):
                from tritongym.env.client import HttpEnv

                _envs[spec] = HttpEnv(spec, os.environ.get("TRITONGYM_TOKEN"))
            else:
                raise ConfigError(f"{ENV_VARIABLE} must be 'local', 'ray' or an http(s):// URL, not {spec!r}")
        return _envs[spec]


def default_extract(text: str, problem: Problem) -> str | None:
    """The agent's extractor (last fenced block that defines the solution class), or None."""
    from tritongym.agent.extract import extract

    return extract(text, problem.solution_class).code


def default_feedback(result: EvalResult) -> str:
    """The agent's rendering of an evaluation as text for the model's next turn."""
    from tritongym.agent.feedback import render_feedback

    return render_feedback(result)


def default_messages(problem: Problem) -> list[dict[str, str]]:
    """The first turn (system and user messages) of the agent's ``kernelbench`` template. Its assistant
    prefill, if any, is left out: TRL 1.16's GRPOTrainer and verl's agent loops add a generation
    prompt after the last message, so a prefill could not be continued."""
    from tritongym.agent.prompts import Prompts

    return Prompts().initial(problem)


def problem_from_columns(
    name: str, source: str, entry_point: str | None = "Model", shrunk: str | None = None
) -> Problem:
    """The Problem a dataset row describes (the columns :func:`problem_columns` wrote; ``shrunk``, the
    ``problem_shrunk`` column, may be missing from a dataset written before it was one)."""
    sizes = {name: tuple(pair) for name, pair in json.loads(shrunk).items()} if shrunk else {}
    return Problem(name=str(name), source=source, entry_point=entry_point or "Model", shrunk=sizes)


def problem_columns(problem: Problem) -> dict[str, str]:
    """The columns that carry a problem through a dataset: ``problem``, ``problem_source``, ``entry_point``
    and ``problem_shrunk`` (what was shrunk for the CPU, as JSON, ``{}`` where nothing was: the
    judge's second size is made from it, ``Problem.resized``)."""
    return {
        "problem": problem.name,
        "problem_source": problem.source,
        "entry_point": problem.entry_point,
        "problem_shrunk": json.dumps(problem.to_dict().get("shrunk", {})),
    }


@dataclass(frozen=True)
class Score:
    """The reward of one answer and how it came about."""

    reward: float | None
    """The composed reward; None for an infrastructure error (never a training signal)."""
    verdict: str
    """The evaluation's verdict, or ``no_code`` when the answer had no code to evaluate."""
    code: str | None = None
    """The extracted candidate source."""
    result: EvalResult | None = None
    """The evaluation, or None when nothing was evaluated."""
    parts: dict[str, float | None] = field(default_factory=dict)
    """The components before weighting: ``kernel`` and, when a format reward is set, ``format``."""

    @property
    def infrastructure_error(self) -> bool:
        return self.verdict == Verdict.INFRASTRUCTURE_ERROR.value


def program_key(code: object) -> object:
    """What tells two submitted programs apart: the syntax tree (whitespace, comments and layout make no
    other program), the text where it does not parse, None for no program."""
    if not isinstance(code, str):
        return None
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code


def rollout_reward(scores: Sequence[Score], reward_of: str = "best") -> float | None:
    """The reward of a rollout that evaluated several answers (turns of an episode, or tool calls):
    its best (``best``) or last (``last``) evaluation's; None where that one was an infrastructure
    error, or there is none. Except that a rollout in which any evaluation was a hack (the ``hack``
    category) is paid the lowest of those hacks' rewards, whatever its other evaluations earned: a
    hack followed by a correct answer would otherwise be paid the correct one's, so that the hack
    penalty never reached a rollout that also got something right (red team 5 #6), and a policy
    loses nothing by trying a cheat first. Under ``best``, a program evaluated more than once counts
    its worst evaluation (``program_key``): each evaluation is a fresh draw of the judge's randomness
    (inputs, second size, timing), and the best of several draws of one program paid its luck, a race
    right on half of its evaluations ``ok`` 15 times in 16 at four calls (red team 23 #6)."""
    hacks = [s.reward for s in scores if s.reward is not None and is_hack(s.verdict)]
    if hacks:
        return min(hacks)
    if reward_of == "last":
        return scores[-1].reward if scores else None
    worst: dict[object, float] = {}
    for s in scores:
        if s.reward is not None:
            key = program_key(s.code)
            worst[key] = min(worst.get(key, s.reward), s.reward)
    return max(worst.values()) if worst else None


def _failed(problem: Problem, exc: BaseException) -> EvalResult:
    return EvalResult(
        problem=problem.name,
        verdict=Verdict.INFRASTRUCTURE_ERROR,
        feedback="The evaluation service failed; this is not a verdict on the kernel.",
        detail=f"{type(exc).__name__}: {exc}",
    )


@dataclass
class Scorer:
    """Extract, evaluate and reward a batch of answers, in input order."""

    env: Env
    """Where candidates are evaluated: ``LocalEnv``, ``RayEnv`` or ``HttpEnv`` (anything with ``submit``)."""
    reward: Callable[[Any], float | None] = field(default_factory=VerifiableReward)
    """Outcome reward of an EvalResult (``VerifiableReward``, ``TieredReward``...); None for infrastructure errors."""
    config: EvalConfig | None = None
    """How each candidate is evaluated (the Env's default when None)."""
    format_reward: Callable[[str], float] | None = None
    """Optional reward of the answer's text alone (e.g. ``FormatReward()``), added with ``format_weight``."""
    format_weight: float = 0.1
    """Weight of ``format_reward``; the outcome reward has weight 1."""
    extract: Callable[[str, Problem], str | None] = default_extract
    """(answer text, problem) -> candidate source, or None when the answer holds no usable code."""

    def codes(self, problems: Sequence[Problem], texts: Sequence[str]) -> list[str | None]:
        """The candidate of each answer (None where there is none)."""
        if len(problems) != len(texts):
            raise ValueError(f"{len(texts)} answers for {len(problems)} problems")
        return [self.extract(text, problem) for problem, text in zip(problems, texts, strict=True)]

    def submit(self, problems: Sequence[Problem], codes: Sequence[str | None]) -> list[Future[EvalResult] | None]:
        """Queue every candidate at once; None where there is no candidate. An Env that refuses a
        submission (a service down) gives a failed future: an infrastructure error, not a crash."""
        return [None if code is None else self._submit(p, code) for p, code in zip(problems, codes, strict=True)]

    @staticmethod
    def programs(codes: Sequence[Any]) -> list[str | None]:
        """The candidates to evaluate: a code that is not a string (a tool call's ``{"code": null}``,
        a number, a list: the model's to choose) is no program, the model's ``no_code``; submitted,
        the Env's refusal was an infrastructure error and the sample was dropped instead of
        penalised (red team 9 #2)."""
        return [code if isinstance(code, str) else None for code in codes]

    def _submit(self, problem: Problem, code: str) -> Future[EvalResult]:
        try:
            return self.env.submit(problem, code, self.config)
        except Exception as exc:
            failed: Future[EvalResult] = Future()
            failed.set_exception(exc)
            return failed

    def finish(
        self,
        problems: Sequence[Problem],
        texts: Sequence[str],
        codes: Sequence[str | None],
        results: Sequence[EvalResult | BaseException | None],
    ) -> list[Score]:
        """Scores from the evaluations (an exception stands for a failed evaluation)."""
        return [self._score(*row) for row in zip(problems, texts, codes, results, strict=True)]

    def score(
        self, problems: Sequence[Problem], texts: Sequence[str], codes: Sequence[str | None] | None = None
    ) -> list[Score]:
        """Evaluate and reward a batch, blocking until every evaluation is done. ``codes``: the
        candidates when the caller has them already (no extraction from ``texts``)."""
        codes = self.programs(self.codes(problems, texts) if codes is None else codes)
        futures = self.submit(problems, codes)
        return self.finish(problems, texts, codes, [_outcome(f) for f in futures])

    async def ascore(
        self, problems: Sequence[Problem], texts: Sequence[str], codes: Sequence[str | None] | None = None
    ) -> list[Score]:
        """As :meth:`score`, awaiting the evaluations instead of blocking the event loop."""
        codes = self.programs(self.codes(problems, texts) if codes is None else codes)
        futures = self.submit(problems, codes)
        awaitables = [asyncio.wrap_future(f) for f in futures if f is not None]
        done = iter(await asyncio.gather(*awaitables, return_exceptions=True))
        return self.finish(problems, texts, codes, [None if f is None else next(done) for f in futures])

    def _score(
        self, problem: Problem, text: str, code: str | None, outcome: EvalResult | BaseException | None
    ) -> Score:
        if isinstance(outcome, BaseException):
            log.warning("evaluation of %s failed (%s); its reward is None", problem.name, outcome)
            outcome = _failed(problem, outcome)
        kernel = self.reward(NO_CODE_OUTCOME if outcome is None else outcome)
        parts: dict[str, float | None] = {"kernel": kernel}
        reward = kernel
        if self.format_reward is not None:
            parts["format"] = self.format_reward(text)
            reward = weighted_sum([kernel, parts["format"]], [1.0, self.format_weight])
        verdict = NO_CODE if outcome is None else str(outcome.verdict.value)
        return Score(reward=reward, verdict=verdict, code=code, result=outcome, parts=parts)


def _outcome(future: Future[EvalResult] | None) -> EvalResult | BaseException | None:
    if future is None:
        return None
    try:
        return future.result()
    except Exception as exc:  # a failed evaluation service is an infrastructure error, not a crash of training
        return exc
