"""The rollout side of the trainer: an engine that samples with the current weights, the episode
runner of tritongym.agent over it, and the rewards a config names.

The loop talks to a :class:`RolloutEngine` only: a Policy (token ids + behaviour log-probs) that is
told when the trained weights changed. ``hf`` samples with the trained model itself (nothing to
sync); a vLLM engine (colocated, weights pushed in ``update_weights``) fits the same interface.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tritongym.agent.episodes import Episode, EpisodeConfig, EpisodeRunner, TurnOutcome
from tritongym.agent.prompts import Prompts
from tritongym.env.base import Env
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.policy.base import Policy, SamplingConfig
from tritongym.problems import Problem
from tritongym.rewards import KernelCoderReward, TieredReward, VerifiableReward
from tritongym.rewards.outcome import NO_CODE_OUTCOME


@runtime_checkable
class RolloutEngine(Protocol):
    """Samples episodes' answers with the policy being trained."""

    policy: Policy
    """The Policy the episode runner calls (it must fill token ids and behaviour log-probs)."""

    def update_weights(self, model: Any) -> None:
        """The trained model changed: sample from it from now on."""
        ...


class HFRollout:
    """Sampling with the trained transformers model itself (shared weights: nothing to copy)."""

    def __init__(self, policy: Policy):
        self.policy = policy

    def update_weights(self, model: Any) -> None:
        return None


# -- rewards ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainReward:
    """A turn's reward for training, and whether it needs the environment's evaluation."""

    fn: Callable[[TurnOutcome], float | None]
    needs_env: bool


def build_reward(name: str, options: dict[str, Any] | None = None, no_code: float | None = None) -> TrainReward:
    """The reward a config names (see RewardSection.name). ``no_code``: what an environment reward pays an
    answer without a program; None, what the reward itself pays it (``NO_CODE_OUTCOME``, a failure): a
    fixed 0.0 paid nothing under ``tiered`` more than every failed attempt, hack and slow kernel (-1, -1,
    -0.1), so that writing nothing beat trying (red team 23 #2)."""
    options = dict(options or {})
    if name in ("verifiable", "tiered"):
        scorer = (VerifiableReward if name == "verifiable" else TieredReward)(**options)
        unanswered = scorer(NO_CODE_OUTCOME) if no_code is None else no_code

        def env_reward(outcome: TurnOutcome) -> float | None:
            return unanswered if outcome.result is None else scorer(outcome.result)

        return TrainReward(env_reward, needs_env=True)
    if name == "kernel-coder":
        scorer = KernelCoderReward(**options)

        def text_reward(outcome: TurnOutcome) -> float | None:
            if not outcome.problem.solution:
                raise ConfigError(f"reward kernel-coder needs a reference solution; {outcome.problem.name} has none")
            return scorer.score(outcome.text, outcome.code, outcome.problem.solution)  # the submitted program

        return TrainReward(text_reward, needs_env=False)
    module_name, sep, attr = name.partition(":")
    if not sep:
        raise ConfigError(f"unknown reward {name!r}: use verifiable, tiered, kernel-coder or module:attr")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"reward {name!r} cannot be imported: {exc}") from exc
    if options:
        target = target(**options)

    def custom(outcome: TurnOutcome) -> float | None:
        return target(outcome.problem, outcome.text, outcome.result)

    return TrainReward(custom, needs_env=bool(getattr(target, "needs_env", True)))


# -- episodes -------------------------------------------------------------------------------------


@dataclass
class RolloutBatch:
    """Episodes of one step and what producing them cost."""

    episodes: list[Episode]
    seconds: dict[str, float] = field(default_factory=dict)
    """``generate`` (summed over batched calls) and ``env`` (wall time not spent generating)."""


def run_episodes(
    engine: RolloutEngine,
    env: Env | None,
    problems: list[Problem],
    *,
    samples: int,
    episode: EpisodeConfig,
    sampling: SamplingConfig,
    reward: TrainReward,
    eval_config: EvalConfig | None,
    run_id: str = "",
    lock: threading.Lock | None = None,
    generated: threading.Event | None = None,
) -> RolloutBatch:
    """``samples`` episodes of each problem through tritongym.agent's EpisodeRunner. Each generation
    holds ``lock`` (the trainer's weights lock) and then sets ``generated``."""
    timed = _TimedPolicy(engine.policy, lock, generated)
    if reward.needs_env and env is None:
        raise ConfigError("this reward needs evaluations, but no environment was given")
    runner = EpisodeRunner(
        timed,
        env if reward.needs_env else None,  # None: the runner's text-only mode, nothing is evaluated
        episode,
        sampling=sampling,
        eval_config=eval_config,
        reward=reward.fn,
        run_id=run_id,
    )
    start = time.monotonic()
    episodes = runner.run(problems, samples)
    total = time.monotonic() - start
    return RolloutBatch(episodes, {"generate": timed.seconds, "env": max(total - timed.seconds, 0.0)})


class _TimedPolicy:
    """A Policy that adds up the time its ``generate`` calls take, holding ``lock`` while generating
    and setting ``generated`` after each call."""

    def __init__(self, policy: Policy, lock: threading.Lock | None, generated: threading.Event | None):
        self.policy, self.name, self.seconds = policy, policy.name, 0.0
        self.lock, self.generated = lock or contextlib.nullcontext(), generated

    def generate(self, conversations, sampling):
        with self.lock:
            start = time.monotonic()
            try:
                return self.policy.generate(conversations, sampling)
            finally:
                self.seconds += time.monotonic() - start
                if self.generated is not None:
                    self.generated.set()


def episode_config(template: str, feedback_template: str, extraction: str, turns: int, history: str) -> EpisodeConfig:
    return EpisodeConfig(
        turns=turns, history=history, extraction=extraction, prompts=Prompts(template, feedback_template)
    )
