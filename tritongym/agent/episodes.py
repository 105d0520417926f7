"""Multi-turn episodes: a policy answers, an Env judges, the feedback becomes the next user message.

One episode is one problem and one sample index, for up to ``iterations * turns`` turns. Many
episodes run at once in :class:`EpisodeRunner`: every episode waiting for an answer joins the next
batched ``policy.generate`` call (run in a worker thread), each extracted program is submitted to the
Env (``env.submit`` returns a future), and while the Env evaluates, episodes whose evaluation has
finished are already generating their next turn. The runner is synchronous from the outside
(``run`` returns when every episode is over), keeps no global state, and streams one
:class:`~tritongym.agent.records.TurnRecord` per finished turn to ``on_record``.

Without an Env (``env=None``, the text-only mode of rewards that read the answer alone) nothing is
evaluated: every turn is scored as soon as its answer is extracted; the reward sees ``result=None``
with the text and the extracted code, and the record's verdict is ``unevaluated`` (``no_code`` when
nothing could be extracted).

Failures that are not the model's are never scored: an evaluation with the ``infrastructure_error``
verdict (or an Env that raised) is submitted again up to ``eval_retries`` times, a completion with
``finish_reason == "error"`` is generated again up to ``generation_retries`` times; after that the
turn is recorded with ``reward=None`` and the episode stops.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

from tritongym.agent.extract import POLICIES, extract
from tritongym.agent.feedback import FeedbackConfig, render_feedback
from tritongym.agent.history import Exchange, History, best_window_start
from tritongym.agent.prompts import Prompts
from tritongym.agent.records import NO_CODE, TurnRecord
from tritongym.env.base import Env
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.policy.base import Completion, Message, Policy, SamplingConfig
from tritongym.problems import Problem
from tritongym.rewards.outcome import NO_CODE_OUTCOME
from tritongym.rewards.verifiable import VerifiableReward

log = logging.getLogger(__name__)

INFRASTRUCTURE = Verdict.INFRASTRUCTURE_ERROR.value
UNEVALUATED = "unevaluated"
"""Verdict of a turn whose program was extracted but not evaluated (a runner without an Env)."""


@dataclass(frozen=True)
class TurnOutcome:
    """What a reward function sees of one turn."""

    problem: Problem
    text: str
    """The whole answer (the prefill, if any, followed by the completion)."""
    code: str | None
    """The extracted program, or None (``no_code``)."""
    result: EvalResult | None
    """The evaluation, or None when nothing was evaluated (no code, or a runner without an Env)."""
    finish_reason: str = "stop"

    @property
    def verdict(self) -> str:
        """The verdict's value; ``no_code`` without code; ``unevaluated`` for code nobody evaluated."""
        if self.result is not None:
            return self.result.verdict.value
        return NO_CODE if self.code is None else UNEVALUATED


RewardFn = Callable[[TurnOutcome], float | None]
"""A reward of one turn; None means "not a training signal"."""


def default_reward(outcome: TurnOutcome) -> float | None:
    """:class:`~tritongym.rewards.VerifiableReward` with its defaults; ``no_code`` earns its failure value."""
    return VerifiableReward()(outcome.result if outcome.result is not None else NO_CODE_OUTCOME)


@dataclass(frozen=True)
class EpisodeConfig:
    """The shape of an episode and how its turns are judged."""

    turns: int = 1
    """Turns per iteration (1: single-turn)."""
    iterations: int = 1
    """Test-time-scaling iterations; each restarts its context from the best:K window (needs history best:K)."""
    history: str = "all"
    """Which earlier exchanges a turn sees: ``all``, ``last:K`` or ``best:K`` (see agent/history.py)."""
    extraction: str = "last"
    """How the program is taken from an answer: ``first``, ``last`` or ``answer`` (see agent/extract.py)."""
    prompts: Prompts = field(default_factory=Prompts)
    """Templates of the first turn and of the feedback turns."""
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)
    """How evaluation results are rendered for the model."""
    eval_retries: int = 2
    """Extra submissions of an evaluation that hit an infrastructure error before the turn is left unscored."""
    generation_retries: int = 2
    """Extra generations of a completion that failed (finish_reason ``error``) before the turn is left unscored."""
    generation_batches: int = 1
    """``policy.generate`` calls in flight at once (1 for a local model; a remote policy batches internally)."""
    max_batch: int | None = None
    """Most conversations per ``policy.generate`` call (None: every episode waiting)."""

    def __post_init__(self) -> None:
        if self.turns < 1 or self.iterations < 1:
            raise ConfigError(f"turns and iterations must be at least 1, not {self.turns} and {self.iterations}")
        history = History.parse(self.history)
        if self.iterations > 1 and history.mode != "best":
            raise ConfigError(f"iterations={self.iterations} restart from a best:K window: set history to best:K")
        if self.extraction not in POLICIES:
            raise ConfigError(f"extraction must be one of {', '.join(POLICIES)}, not {self.extraction!r}")
        if self.eval_retries < 0 or self.generation_retries < 0:
            raise ConfigError("eval_retries and generation_retries must not be negative")
        if self.generation_batches < 1 or (self.max_batch is not None and self.max_batch < 1):
            raise ConfigError("generation_batches and max_batch must be at least 1")

    @property
    def total_turns(self) -> int:
        return self.turns * self.iterations


def turn_key(model: str, problem: str, sample: int, iteration: int, turn: int, messages: Sequence[Message]) -> str:
    """The content key of a turn: what the policy was asked, by whom, for which sample and turn.

    Sampling and evaluation settings are not part of it: a run directory holds one configuration
    (``tritongym bench`` refuses to resume a run with other settings)."""
    payload = json.dumps([model, problem, sample, iteration, turn, list(messages)], sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def record_key(record: TurnRecord) -> str:
    return turn_key(record.model, record.problem, record.sample, record.iteration, record.turn, record.messages)


@dataclass
class Episode:
    """One problem, one sample: its turns in order."""

    problem: Problem
    sample: int
    records: list[TurnRecord] = field(default_factory=list)
    scored: bool = True
    """False when a turn could not be judged (infrastructure or generation error) and the episode stopped."""


@dataclass
class _State:
    episode: Episode
    turn: int = 0
    exchanges: list[Exchange] = field(default_factory=list)
    carried: list[Exchange] = field(default_factory=list)
    """The best:K window this iteration started from (iterations > 1)."""
    iteration_start: int = 0
    """Index in ``exchanges`` of this iteration's first exchange."""


@dataclass
class _Turn:
    state: _State
    messages: list[Message]
    completion: Completion | None = None
    text: str = ""
    code: str | None = None
    generate_s: float = 0.0
    generations: int = 0
    submissions: int = 0
    submitted_at: float = 0.0
    error: str = ""


class EpisodeRunner:
    """Runs episodes of a policy against an Env. See the module docstring and docs/agent.md."""

    def __init__(
        self,
        policy: Policy,
        env: Env | None,
        config: EpisodeConfig | None = None,
        *,
        sampling: SamplingConfig | None = None,
        eval_config: EvalConfig | None = None,
        reward: RewardFn = default_reward,
        reward_parts: Mapping[str, RewardFn] | None = None,
        run_id: str = "",
        on_record: Callable[[TurnRecord], None] | None = None,
        cache: Mapping[str, TurnRecord] | None = None,
    ):
        """``env=None`` evaluates nothing (the text-only mode: see the module docstring); ``reward``
        gives each turn's ``reward``, ``reward_parts`` its named ``rewards``; ``on_record``
        receives every new record in the caller's thread; ``cache`` maps :func:`turn_key` to records
        of an earlier run, reused instead of generating and evaluating again (not passed to ``on_record``)."""
        self.policy, self.env = policy, env
        self.config = config or EpisodeConfig()
        self.sampling = replace(sampling or SamplingConfig(), n=1)
        self.eval_config = eval_config
        self.reward, self.reward_parts = reward, dict(reward_parts or {})
        self.run_id, self.on_record, self.cache = run_id, on_record, cache or {}
        self.history = History.parse(self.config.history)

    # -- the public entry points ---------------------------------------------------------------

    def run(self, problems: Sequence[Problem], samples: int = 1) -> list[Episode]:
        """``samples`` episodes of every problem; returns them in (problem, sample) order."""
        return self.run_episodes([(p, s) for p in problems for s in range(samples)])

    def run_episodes(self, jobs: Sequence[tuple[Problem, int]]) -> list[Episode]:
        """One episode per (problem, sample index); returns them in the order given."""
        states = [_State(Episode(problem, sample)) for problem, sample in jobs]
        ready: deque[_Turn] = deque()
        for state in states:
            self._queue_next(state, ready)
        generating: dict[Future, list[_Turn]] = {}
        evaluating: dict[Future, _Turn] = {}
        pool = ThreadPoolExecutor(self.config.generation_batches, thread_name_prefix="tritongym-generate")
        try:
            while ready or generating or evaluating:
                while ready and len(generating) < self.config.generation_batches:
                    size = self.config.max_batch or len(ready)
                    batch = [ready.popleft() for _ in range(min(size, len(ready)))]
                    generating[pool.submit(self._generate, batch)] = batch
                done, _ = wait([*generating, *evaluating], return_when=FIRST_COMPLETED)
                for future in done:
                    if future in generating:
                        future.result()  # a policy that raised (a bug, a fatal error) ends the run
                        for turn in generating.pop(future):
                            self._after_generation(turn, ready, evaluating)
                    else:
                        turn = evaluating.pop(future)
                        self._after_evaluation(turn, future, ready, evaluating)
        except BaseException:
            for future in [*generating, *evaluating]:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)  # do not wait for an answer nobody will read
            raise
        pool.shutdown()
        return [s.episode for s in states]

    # -- building turns ------------------------------------------------------------------------

    def _messages(self, state: _State) -> list[Message]:
        prompts = self.config.prompts
        if self.config.iterations > 1:
            window = state.carried + state.exchanges[state.iteration_start :]
        else:
            window = self.history.window(state.exchanges)
        messages = prompts.initial(state.episode.problem)
        for exchange in window:
            messages += [exchange.answer, exchange.feedback]
        if prompts.prefill:
            messages.append({"role": "assistant", "content": prompts.prefill})
        return messages

    def _queue_next(self, state: _State, ready: deque[_Turn]) -> None:
        """Queue the episode's next turn, first replaying every turn the cache already holds."""
        while state.turn < self.config.total_turns and state.episode.scored:
            if state.turn and state.turn % self.config.turns == 0 and state.iteration_start < len(state.exchanges):
                start = best_window_start([e.reward for e in state.exchanges], self.history.k)
                state.carried = state.exchanges[start : start + self.history.k]
                state.iteration_start = len(state.exchanges)
            messages = self._messages(state)
            problem, sample = state.episode.problem, state.episode.sample
            iteration = state.turn // self.config.turns
            key = turn_key(self.policy.name, problem.name, sample, iteration, state.turn, messages)
            cached = self.cache.get(key)
            if cached is None or cached.verdict == INFRASTRUCTURE:
                ready.append(_Turn(state, messages))
                return
            self._advance(state, cached, self._feedback_of(cached, problem), emit=False)

    def _feedback_of(self, record: TurnRecord, problem: Problem) -> str:
        if record.result is None:
            return extract(record.answer_text(), problem.solution_class,
                           self.config.extraction, record.finish_reason).feedback  # fmt: skip
        return render_feedback(EvalResult.from_dict(record.result), self.config.feedback)

    # -- generation ----------------------------------------------------------------------------

    def _generate(self, batch: list[_Turn]) -> None:
        start = time.monotonic()
        completions = self.policy.generate([t.messages for t in batch], self.sampling)
        if len(completions) != len(batch) or any(len(c) != 1 for c in completions):
            raise RuntimeError(f"policy {self.policy.name}: {len(completions)} answers for {len(batch)} prompts")
        seconds = time.monotonic() - start
        for turn, (completion,) in zip(batch, completions, strict=True):
            turn.completion, turn.generate_s = completion, turn.generate_s + seconds
            turn.generations += 1

    def _after_generation(self, turn: _Turn, ready: deque[_Turn], evaluating: dict[Future, _Turn]) -> None:
        completion = turn.completion
        assert completion is not None
        if completion.finish_reason == "error":
            log.warning("generation failed (%s) for %s: %s", turn.generations, turn.state.episode.problem.name,
                        completion.error)  # fmt: skip
            if turn.generations <= self.config.generation_retries:
                ready.append(turn)
            else:
                self._finish(turn, None, ready, unscored=f"generation failed: {completion.error}")
            return
        turn.text = self.config.prompts.prefill + completion.text
        problem = turn.state.episode.problem
        extraction = extract(turn.text, problem.solution_class, self.config.extraction, completion.finish_reason)
        if extraction.code is None:
            self._finish(turn, None, ready, feedback=extraction.feedback)
            return
        turn.code = extraction.code
        if self.env is None:
            self._finish(turn, None, ready)
        else:
            self._submit(turn, evaluating)

    # -- evaluation ----------------------------------------------------------------------------

    def _submit(self, turn: _Turn, evaluating: dict[Future, _Turn]) -> None:
        assert self.env is not None
        turn.submissions += 1
        turn.submitted_at = time.monotonic()
        try:
            future = self.env.submit(turn.state.episode.problem, turn.code, self.eval_config)
        except Exception as exc:  # the Env itself failed (e.g. an unreachable service)
            failed: Future = Future()
            failed.set_exception(exc)
            future = failed
        evaluating[future] = turn

    def _after_evaluation(self, turn: _Turn, future: Future, ready: deque[_Turn], evaluating: dict) -> None:
        problem = turn.state.episode.problem.name
        try:
            result = future.result()
        except Exception as exc:
            result, turn.error = None, f"{type(exc).__name__}: {exc}"
            log.warning("the Env failed to evaluate %s (%d): %s", problem, turn.submissions, turn.error)
        else:
            if result.verdict is Verdict.INFRASTRUCTURE_ERROR:
                turn.error = result.feedback
                log.warning("infrastructure error evaluating %s (%d): %s", problem, turn.submissions, result.feedback)
        if result is not None and result.verdict is not Verdict.INFRASTRUCTURE_ERROR:
            self._finish(turn, result, ready, feedback=render_feedback(result, self.config.feedback))
        elif turn.submissions <= self.config.eval_retries:
            self._submit(turn, evaluating)
        else:
            self._finish(turn, result, ready, unscored=turn.error)

    # -- finishing a turn ----------------------------------------------------------------------

    def _finish(
        self, turn: _Turn, result: EvalResult | None, ready: deque[_Turn], feedback: str = "", unscored: str = ""
    ) -> None:
        state, completion = turn.state, turn.completion
        assert completion is not None
        problem = state.episode.problem
        outcome = TurnOutcome(problem, turn.text, turn.code, result, completion.finish_reason)
        if unscored:
            verdict, reward, parts = INFRASTRUCTURE, None, {}
        else:
            verdict, reward = outcome.verdict, self.reward(outcome)
            parts = {name: fn(outcome) for name, fn in self.reward_parts.items()}
        seconds = {"generate": round(turn.generate_s, 4)}
        if turn.submissions:
            seconds["evaluate"] = round(time.monotonic() - turn.submitted_at, 4)
        record = TurnRecord(
            run_id=self.run_id,
            problem=problem.name,
            sample=state.episode.sample,
            turn=state.turn,
            iteration=state.turn // self.config.turns,
            messages=turn.messages,
            completion=completion.text,
            verdict=verdict,
            model=self.policy.name,
            code=turn.code,
            result=result.to_dict() if result is not None else None,
            reward=reward,
            rewards={k: v for k, v in parts.items() if v is not None},
            finish_reason=completion.finish_reason,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            prompt_token_ids=list(completion.prompt_token_ids),
            token_ids=list(completion.token_ids),
            logprobs=list(completion.logprobs),
            seconds=seconds,
            error=unscored,
        )
        self._advance(state, record, feedback, emit=True)
        self._queue_next(state, ready)

    def _advance(self, state: _State, record: TurnRecord, feedback: str, emit: bool) -> None:
        state.episode.records.append(record)
        if emit and self.on_record is not None:
            self.on_record(record)
        if record.verdict == INFRASTRUCTURE:
            state.episode.scored = False
            return
        problem = state.episode.problem
        answer = {"role": "assistant", "content": record.answer_text()}
        message = self.config.prompts.feedback(problem, feedback)
        state.exchanges.append(Exchange(answer, message, record.reward, record.turn))
        state.turn += 1
