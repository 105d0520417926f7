"""A multi-turn agent loop for verl (``verl.experimental.agent_loop``): one episode = turns of
answer -> evaluation -> feedback, registered as ``tritongym_kernel``.

Each turn the policy answers; the answer's code is evaluated on the Env; unless the turn budget is
spent, the answer was correct (``stop_when_correct``) or the response length is reached, the rendered
feedback goes back as the next user message (its tokens have ``response_mask`` 0, so only the model's
own tokens are trained). verl carries one reward per trajectory (at its last token): the episode's
reward is that of its best turn (or its last, ``TRITONGYM_EPISODE_REWARD=last``), the hack penalty
where any turn was a hack; NaN when the deciding turn was an infrastructure error. Every turn's
reward and verdict are in ``extra_fields`` (``turn_scores``, ``turn_verdicts``). With
``algorithm.adv_estimator=tritongym_trloo`` (or ``_discounted``) each turn is a sample of its
(prompt, turn) group, all turns carrying the episode reward, discounted by ``algorithm.gamma`` from
the last turn back.

This module imports verl at the top: only verl's workers (through the registry) and
:func:`tritongym.integrations.verl.register_with_verl` import it.
"""

from __future__ import annotations

import math
import os
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, _agent_loop_registry
from verl.experimental.agent_loop.agent_loop import register as register_agent_loop

from tritongym.agent.feedback import render_feedback
from tritongym.agent.prompts import Prompts
from tritongym.errors import ConfigError
from tritongym.integrations.scoring import Score, rollout_reward
from tritongym.integrations.verl import AGENT_LOOP, problem_of, scorer_for

DEFAULT_TURNS = 4
"""Turns of an episode when ``actor_rollout_ref.rollout.multi_turn.max_assistant_turns`` is unset."""


def episode_reward(scores: list[Score], reward_of: str = "best") -> float:
    """The trajectory's reward: its best turn's (``best``) or its last turn's (``last``), the lowest
    hack's where a turn was a hack (``scoring.rollout_reward``); NaN when the deciding turn was an
    infrastructure error (tritongym's estimators leave the episode out)."""
    reward = rollout_reward(scores, reward_of)
    return math.nan if reward is None else float(reward)


class KernelAgentLoop(AgentLoopBase):
    """Answer, evaluate, read the feedback, answer again (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.pop("tools", None)
        super().__init__(*args, **kwargs)
        turns = getattr(self.rollout_config.multi_turn, "max_assistant_turns", None)
        self.max_turns = int(turns or DEFAULT_TURNS)
        self.response_length = self.rollout_config.response_length
        self.reward_of = os.environ.get("TRITONGYM_EPISODE_REWARD", "best")
        if self.reward_of not in ("best", "last"):
            raise ConfigError(f"TRITONGYM_EPISODE_REWARD must be 'best' or 'last', not {self.reward_of!r}")
        self.stop_when_correct = os.environ.get("TRITONGYM_STOP_WHEN_CORRECT", "1") != "0"
        self.prompts = Prompts()
        self.scorer = scorer_for(None, os.environ.get("TRITONGYM_REWARD", "verifiable"))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        problem = problem_of(kwargs.get("extra_info"))
        messages = list(kwargs["raw_prompt"])
        token_ids = await self.ct_build_initial_tokens(messages)
        response_mask: list[int] = []
        logprobs: list[float] | None = None
        scores: list[Score] = []
        request_id = uuid4().hex
        metrics: dict[str, float] = {}
        for turn in range(self.max_turns):
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=token_ids, sampling_params=sampling_params
            )
            if metrics.get("num_preempted") is None:
                metrics["num_preempted"] = output.num_preempted if output.num_preempted is not None else -1
            merged, response_mask, logprobs = await self.ct_merge_assistant_token(
                token_ids,
                output.token_ids,
                response_mask,
                logprobs if (logprobs or output.log_probs) else None,
                assistant_logprobs=output.log_probs or None,
            )
            token_ids = merged.token_ids
            text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            messages.append({"role": "assistant", "content": text})
            (score,) = await self.scorer.ascore([problem], [text])
            scores.append(score)
            correct = score.result is not None and score.result.correct
            last = turn + 1 >= self.max_turns or len(response_mask) >= self.response_length
            if last or (correct and self.stop_when_correct):
                break
            rendered = render_feedback(score.result) if score.result is not None else self._no_code(text, problem)
            previous = list(messages)
            messages.append(self.prompts.feedback(problem, rendered))
            merged, mask, merged_logprobs = await self.ct_merge_context_msg(
                previous, messages, token_ids, response_mask, logprobs or None
            )
            if len(mask) >= self.response_length:
                messages.pop()
                break
            token_ids, response_mask = merged.token_ids, mask
            if logprobs:
                logprobs = merged_logprobs or []
        response_ids = token_ids[len(token_ids) - len(response_mask) :]
        prompt_ids = token_ids[: len(token_ids) - len(response_mask)]
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[: self.response_length],
            response_mask=response_mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=episode_reward(scores, self.reward_of),
            num_turns=2 * len(scores),
            metrics=metrics,
            extra_fields={
                "turn_scores": [math.nan if s.reward is None else s.reward for s in scores],
                "turn_verdicts": [s.verdict for s in scores],
            },
        )

    @staticmethod
    def _no_code(text: str, problem) -> str:
        from tritongym.agent.extract import extract

        return extract(text, problem.solution_class).feedback


def register() -> None:
    """Put :class:`KernelAgentLoop` in verl's agent-loop registry as ``tritongym_kernel`` (idempotent)."""
    if AGENT_LOOP not in _agent_loop_registry:
        register_agent_loop(AGENT_LOOP)(KernelAgentLoop)
