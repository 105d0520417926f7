"""TRL (``GRPOTrainer``) integration: a reward function, a dataset builder and a tool environment.

* :class:`KernelReward` / :class:`AsyncKernelReward`: ``GRPOTrainer(reward_funcs=[KernelReward(env)])``.
  TRL calls it with the prompts, the completions and the dataset's columns; it extracts each answer's
  code, evaluates the whole batch through the Env at once and returns one reward per completion in
  input order, None for infrastructure errors (TRL then leaves the sample out of the baseline and
  gives it advantage 0, as long as *every* reward function returned None for it; so put format or
  other text rewards inside the KernelReward (``format_reward=``), not beside it, see
  docs/integrations.md).
* :func:`kernel_dataset`: problems -> ``datasets.Dataset`` with a conversational ``prompt`` and the
  columns the reward reads (``problem``, ``problem_source``, ``entry_point``, ``problem_shrunk``).
* :class:`KernelEnvironment`: for ``GRPOTrainer(environment_factory=...)`` (multi-turn through tool
  calls): the model calls ``evaluate_kernel(code)`` and reads the feedback, as often as it likes up to
  a budget; the rollout's reward is that of its best (or last) evaluation.

TRL is imported lazily (``pip install 'tritongym[trl]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from tritongym.env.base import Env
from tritongym.evaluate.config import EvalConfig
from tritongym.integrations.scoring import (
    Score,
    Scorer,
    default_extract,
    default_feedback,
    default_messages,
    problem_columns,
    problem_from_columns,
    rollout_reward,
)
from tritongym.problems import Problem
from tritongym.rewards import VerifiableReward
from tritongym.rewards.outcome import NO_CODE_OUTCOME

Message = dict[str, Any]


def completion_text(completion: str | list[Message]) -> str:
    """The answer of a TRL completion: the text itself, or the last assistant message's content."""
    if isinstance(completion, str):
        return completion
    for message in reversed(completion):
        if message.get("role") == "assistant":
            content = message.get("content") or ""
            if isinstance(content, list):  # content blocks
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content)
    return ""


class KernelReward:
    """A TRL reward function: ``f(prompts, completions, problem, problem_source, entry_point, **kw)``.

    Returns one float per completion, in input order, and None where the evaluation failed for a
    reason that is not the model's (infrastructure error). Logs the verdict of each completion to
    TRL's completions table (``log_extra``) and the share of correct kernels and of infrastructure
    errors as metrics (``log_metric``).
    """

    def __init__(
        self,
        env: Env,
        *,
        reward: Callable[[Any], float | None] | None = None,
        config: EvalConfig | None = None,
        format_reward: Callable[[str], float] | None = None,
        format_weight: float = 0.1,
        extract: Callable[[str, Problem], str | None] = default_extract,
        name: str = "kernel_reward",
    ):
        """``env``: where kernels are evaluated (LocalEnv, RayEnv, HttpEnv). ``reward``: outcome reward of
        an EvalResult (default ``VerifiableReward()``). ``config``: the EvalConfig of every evaluation.
        ``format_reward``/``format_weight``: a text reward added inside this one (so it is None too
        when the kernel reward is). ``name``: the column TRL logs the reward under."""
        self.scorer = Scorer(
            env,
            reward=reward or VerifiableReward(),
            config=config,
            format_reward=format_reward,
            format_weight=format_weight,
            extract=extract,
        )
        self.__name__ = name

    def _inputs(
        self,
        completions: Sequence[Any],
        problem: Sequence[str],
        problem_source: Sequence[str],
        entry_point: Any,
        problem_shrunk: Any,
    ) -> tuple[list[Problem], list[str]]:
        entries = entry_point if entry_point is not None else ["Model"] * len(completions)
        shrunk = problem_shrunk if problem_shrunk is not None else [None] * len(completions)
        rows = zip(problem, problem_source, entries, shrunk, strict=True)
        problems = [problem_from_columns(n, s, e, k) for n, s, e, k in rows]
        return problems, [completion_text(c) for c in completions]

    def _report(self, scores: list[Score], log_metric: Callable | None, log_extra: Callable | None) -> list:
        if log_extra is not None:
            log_extra("verdict", [s.verdict for s in scores])
        if log_metric is not None and scores:
            n = len(scores)
            log_metric(f"{self.__name__}/correct", sum(bool(s.result and s.result.correct) for s in scores) / n)
            log_metric(f"{self.__name__}/infrastructure_errors", sum(s.infrastructure_error for s in scores) / n)
        return [s.reward for s in scores]

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        problem: Sequence[str],
        problem_source: Sequence[str],
        entry_point: Sequence[str] | None = None,
        log_metric: Callable | None = None,
        log_extra: Callable | None = None,
        problem_shrunk: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        problems, texts = self._inputs(completions, problem, problem_source, entry_point, problem_shrunk)
        return self._report(self.scorer.score(problems, texts), log_metric, log_extra)


class AsyncKernelReward(KernelReward):
    """:class:`KernelReward` as a coroutine: TRL runs it on its event loop, alongside other async rewards."""

    async def __call__(  # type: ignore[override]
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        problem: Sequence[str],
        problem_source: Sequence[str],
        entry_point: Sequence[str] | None = None,
        log_metric: Callable | None = None,
        log_extra: Callable | None = None,
        problem_shrunk: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        problems, texts = self._inputs(completions, problem, problem_source, entry_point, problem_shrunk)
        return self._report(await self.scorer.ascore(problems, texts), log_metric, log_extra)


def kernel_dataset(
    problems: Iterable[Problem],
    *,
    messages: Callable[[Problem], list[Message]] | None = None,
    small: bool = False,
):
    """A ``datasets.Dataset`` of conversational prompts, one row per problem, with the columns
    :class:`KernelReward` reads. ``messages``: problem -> the first turn's messages (default: the
    ``kernelbench`` template). ``small``: shrink each problem to its CPU sizes (bundled problems)."""
    from datasets import Dataset

    build = messages or default_messages
    rows = []
    for problem in problems:
        problem = problem.small() if small else problem
        rows.append({"prompt": build(problem), **problem_columns(problem)})
    if not rows:
        raise ValueError("no problems to build a dataset from")
    return Dataset.from_list(rows)


class KernelEnvironment:
    """A TRL ``environment_factory`` environment: the model tests kernels with the ``evaluate_kernel`` tool.

    One instance serves one rollout at a time (TRL pools and ``reset``\\ s them). The reward of the
    rollout (``get_reward``) is the reward of its best evaluation (``reward_of="best"``) or of its last
    one (``"last"``); a rollout that never called the tool gets the reward of an answer without code.
    Build instances with :func:`kernel_environment_factory`.
    """

    def __init__(
        self,
        scorer: Scorer,
        *,
        max_evaluations: int = 4,
        reward_of: Literal["best", "last"] = "best",
        feedback: Callable[[Any], str] = default_feedback,
    ):
        if reward_of not in ("best", "last"):
            raise ValueError(f"reward_of must be 'best' or 'last', not {reward_of!r}")
        if max_evaluations < 1:
            raise ValueError(f"max_evaluations must be at least 1, not {max_evaluations}")
        self._scorer = scorer
        self._max_evaluations = max_evaluations
        self._reward_of = reward_of
        self._feedback = feedback
        self._problem: Problem | None = None
        self._started = 0
        self.scores: list[Score] = []
        """The evaluations of the current rollout, in the order they finished."""

    def reset(
        self,
        problem: str,
        problem_source: str,
        entry_point: str = "Model",
        problem_shrunk: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Start a rollout on the row's problem (the prompt is left as it is)."""
        self._problem = problem_from_columns(problem, problem_source, entry_point, problem_shrunk)
        self._started = 0
        self.scores = []

    async def evaluate_kernel(self, code: str) -> str:
        """Compile, test and time a Triton implementation of the problem, and report what happened.

        Args:
            code: The whole Python program: imports, the @triton.jit kernels and the ModelNew class.

        Returns:
            The verdict and feedback: errors to fix, or how fast the kernel was.
        """
        if self._problem is None:
            raise RuntimeError("evaluate_kernel called before reset")
        if self._started >= self._max_evaluations:
            return f"No evaluations left (the limit is {self._max_evaluations}); give your final answer."
        self._started += 1  # before awaiting: TRL runs a message's tool calls concurrently
        text = code if isinstance(code, str) else ""  # TRL passes the call's JSON arguments unchecked
        (score,) = await self._scorer.ascore([self._problem], [text], codes=[code])
        self.scores.append(score)
        if score.result is None:  # not a string: nothing was evaluated, the answer of no code
            kind = type(code).__name__
            return f"Nothing was evaluated: `code` must be a string holding the whole program, not {kind}."
        return self._feedback(score.result)

    def get_reward(self) -> float | None:
        """The rollout's reward (``scoring.rollout_reward``: the best or the last evaluation's, the last
        being the last to finish of the last message's calls; the lowest hack's where a call was a
        hack); None when the evaluation that decides it was an infrastructure error."""
        if not self.scores:
            return self._scorer.reward(NO_CODE_OUTCOME)
        return rollout_reward(self.scores, self._reward_of)


def kernel_environment_factory(
    env: Env,
    *,
    reward: Callable[[Any], float | None] | None = None,
    config: EvalConfig | None = None,
    max_evaluations: int = 4,
    reward_of: Literal["best", "last"] = "best",
) -> Callable[[], KernelEnvironment]:
    """``GRPOTrainer(environment_factory=kernel_environment_factory(env))``: every environment shares ``env``."""
    scorer = Scorer(env, reward=reward or VerifiableReward(), config=config)
    return lambda: KernelEnvironment(scorer, max_evaluations=max_evaluations, reward_of=reward_of)
