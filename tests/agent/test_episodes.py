"""The episode runner with a fake policy and a fake Env (no sandbox): turns, feedback, history,
retries of infrastructure and generation errors, overlap of generation and evaluation, the cache."""

import threading
import time
from concurrent.futures import Future

import pytest

from tritongym.agent.episodes import EpisodeConfig, EpisodeRunner, TurnOutcome, record_key
from tritongym.agent.prompts import Prompts
from tritongym.errors import ConfigError
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.policy.base import Completion
from tritongym.problems import Problem

A = Problem("a", "class Model:\n    A = 1\n")
B = Problem("b", "class Model:\n    B = 2\n")


def answer(tag: str) -> str:
    return f"Here:\n```python\nclass ModelNew:\n    tag = '{tag}'\n```\n"


class FakePolicy:
    """Answers from ``script[(problem, turn)]``; a text of None is a failed generation."""

    name = "fake"

    def __init__(self, script, default="good"):
        self.script, self.default = script, default
        self.calls: list[tuple[float, list[tuple[str, int]]]] = []

    def generate(self, conversations, sampling):
        assert sampling.n == 1
        batch, out = [], []
        for messages in conversations:
            first = messages[0]["content"] if messages[0]["role"] == "user" else messages[1]["content"]
            problem = "a" if "A = 1" in first else "b"
            turn = sum(m["role"] == "user" for m in messages) - 1
            batch.append((problem, turn))
            tag = self.script.get((problem, turn), self.default)
            if callable(tag):
                tag = tag()
            if tag is None:
                out.append([Completion("", finish_reason="error", error="HTTP 503")])
            else:
                out.append([Completion(tag if tag.startswith("no code") else answer(tag), prompt_tokens=3)])
        self.calls.append((time.monotonic(), batch))
        return out


class FakeEnv:
    """Verdict by the code's tag: good -> ok, bad -> mismatch, infraN -> infrastructure_error N times."""

    def __init__(self, delays=None):
        self.delays = delays or {}
        self.submitted: list[str] = []
        self.finished: dict[str, float] = {}
        self.infra_left: dict[str, int] = {}

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        tag = candidate.split("tag = '")[1].split("'")[0]
        self.submitted.append(f"{problem.name}:{tag}")
        future: Future = Future()
        if tag.startswith("infra"):
            left = self.infra_left.setdefault(f"{problem.name}:{tag}", int(tag[5:]))
            self.infra_left[f"{problem.name}:{tag}"] = left - 1
            verdict = Verdict.INFRASTRUCTURE_ERROR if left > 0 else Verdict.OK
        else:
            verdict = Verdict.OK if tag == "good" else Verdict.MISMATCH
        result = EvalResult(problem.name, verdict, "values differ" if verdict is Verdict.MISMATCH else "fine",
                            compiled=True, correct=verdict is Verdict.OK)  # fmt: skip

        def finish():
            time.sleep(self.delays.get(problem.name, 0.0))
            self.finished[problem.name] = time.monotonic()
            future.set_result(result)

        threading.Thread(target=finish, daemon=True).start()
        return future

    def evaluate_many(self, tasks, config=None):
        raise NotImplementedError

    def close(self):
        pass


def run(script, problems=(A,), samples=1, env=None, **config):
    records = []
    policy = FakePolicy(script)
    runner = EpisodeRunner(policy, env or FakeEnv(), EpisodeConfig(**config), run_id="r", on_record=records.append)
    return runner.run(list(problems), samples), records, policy


def test_two_turns_feedback_becomes_the_next_message():
    episodes, records, _ = run({("a", 0): "bad", ("a", 1): "good"}, turns=2)
    assert [r.verdict for r in records] == ["mismatch", "ok"]
    assert [r.reward for r in records] == [0.0, 1.0]  # ok, no lazy finding: 0.5 + 0.5 x coverage 1
    second = records[1].messages
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "tag = 'bad'" in second[2]["content"] and "Verdict: mismatch" in second[3]["content"]
    assert records[0].run_id == "r" and records[0].model == "fake" and records[0].prompt_tokens == 3
    assert episodes[0].scored and episodes[0].records == records


def test_no_code_is_recorded_and_fed_back():
    _, records, _ = run({("a", 0): "no code, sorry", ("a", 1): "good"}, turns=2)
    assert records[0].verdict == "no_code" and records[0].result is None and records[0].reward == 0.0
    assert "No code block" in records[1].messages[-1]["content"]


def test_infrastructure_errors_are_retried_then_left_unscored():
    env = FakeEnv()
    _, records, _ = run({("a", 0): "infra2"}, env=env, eval_retries=2)
    assert records[0].verdict == "ok" and env.submitted == ["a:infra2"] * 3

    episodes, records, _ = run({("a", 0): "infra5"}, turns=3, eval_retries=1)
    assert len(records) == 1 and records[0].verdict == "infrastructure_error"
    assert records[0].reward is None and records[0].error and not episodes[0].scored


def test_generation_errors_are_retried_then_left_unscored():
    flaky = iter([None, "good"])
    _, records, _ = run({("a", 0): lambda: next(flaky)})
    assert records[0].verdict == "ok"
    episodes, records, _ = run({("a", 0): None}, turns=2, generation_retries=1)
    assert [r.verdict for r in records] == ["infrastructure_error"]
    assert records[0].reward is None and "HTTP 503" in records[0].error and not episodes[0].scored


def test_generation_overlaps_slow_evaluations():
    env = FakeEnv(delays={"a": 0.6, "b": 0.0})
    _, records, policy = run({}, problems=(A, B), env=env, turns=2)
    assert len(records) == 4
    b_second = next(t for t, batch in policy.calls if ("b", 1) in batch)
    assert b_second < env.finished["a"], "b's second turn waited for a's evaluation"
    assert policy.calls[0][1] == [("a", 0), ("b", 0)]  # the first turn is one batch


def test_many_samples_each_an_episode():
    episodes, records, _ = run({}, problems=(A, B), samples=3, turns=2)
    assert [(e.problem.name, e.sample) for e in episodes] == [(p, s) for p in "ab" for s in range(3)]
    assert len(records) == 12 and all(len(e.records) == 2 for e in episodes)


def test_iterations_restart_from_the_best_window():
    script = {("a", 0): "good", ("a", 1): "bad", ("a", 2): "bad"}
    _, records, _ = run(script, turns=2, iterations=2, history="best:1")
    assert [(r.iteration, r.turn) for r in records] == [(0, 0), (0, 1), (1, 2), (1, 3)]
    third = records[2].messages  # iteration 1 starts from the best single exchange: turn 0 (good)
    assert len(third) == 4 and "tag = 'good'" in third[2]["content"]
    fourth = records[3].messages  # then accumulates within the iteration
    assert len(fourth) == 6 and "tag = 'bad'" in fourth[4]["content"]


def test_last_k_history():
    _, records, _ = run({}, turns=4, history="last:1")
    assert [len(r.messages) for r in records] == [2, 4, 4, 4]


def test_prefill_is_continued_and_kept_in_the_answer():
    _, records, _ = run({("a", 0): "bad"}, turns=2, prompts=Prompts("kernel-coder"))
    first = records[0]
    assert first.messages[-1] == {"role": "assistant", "content": "<think>"}
    assert first.answer_text().startswith("<think>Here:")
    assert records[1].messages[2]["content"] == first.answer_text()
    assert records[1].messages[-1]["role"] == "assistant"


def test_injected_rewards():
    def total(outcome: TurnOutcome):
        return 1.0 if outcome.verdict == "ok" else -1.0

    parts = {"length": lambda o: float(len(o.text)), "skip": lambda o: None}
    records = []
    runner = EpisodeRunner(FakePolicy({}), FakeEnv(), reward=total, reward_parts=parts, on_record=records.append)
    runner.run([A])
    assert records[0].reward == 1.0 and records[0].rewards == {"length": float(len(answer("good")))}


def test_without_an_env_turns_are_scored_from_the_text_alone():
    seen: list[TurnOutcome] = []

    def text_reward(outcome: TurnOutcome):
        seen.append(outcome)
        return 1.0 if outcome.code is not None and "good" in outcome.text else 0.0

    records = []
    runner = EpisodeRunner(FakePolicy({("a", 0): "no code here", ("a", 1): "bad"}), None, EpisodeConfig(turns=3),
                           reward=text_reward, on_record=records.append)  # fmt: skip
    runner.run([A])
    assert [r.verdict for r in records] == ["no_code", "unevaluated", "unevaluated"]
    assert [r.reward for r in records] == [0.0, 0.0, 1.0]
    assert all(o.result is None for o in seen) and seen[0].code is None and "tag = 'bad'" in seen[1].code
    assert all(r.result is None and "evaluate" not in r.seconds for r in records)
    assert "No code block" in records[1].messages[-1]["content"]


def test_cache_replays_without_generating_or_evaluating():
    _, records, _ = run({("a", 0): "bad"}, problems=(A, B), samples=2, turns=2)
    cache = {record_key(r): r for r in records}
    policy, env, fresh = FakePolicy({("a", 0): "bad"}), FakeEnv(), []
    episodes = EpisodeRunner(policy, env, EpisodeConfig(turns=2), run_id="r", cache=cache, on_record=fresh.append).run(
        [A, B], 2
    )
    assert policy.calls == [] and env.submitted == [] and fresh == []
    assert [r.to_dict() for e in episodes for r in e.records] == [r.to_dict() for r in sorted(
        records, key=lambda r: (r.problem, r.sample, r.turn))]  # fmt: skip


def test_cache_with_a_missing_turn_continues_from_there():
    _, records, _ = run({}, turns=3)
    cache = {record_key(r): r for r in records[:2]}
    policy, fresh = FakePolicy({}), []
    EpisodeRunner(policy, FakeEnv(), EpisodeConfig(turns=3), run_id="r", cache=cache, on_record=fresh.append).run([A])
    assert [r.turn for r in fresh] == [2] and len(policy.calls) == 1


def test_a_policy_that_raises_ends_the_run():
    class Broken(FakePolicy):
        def generate(self, conversations, sampling):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        EpisodeRunner(Broken({}), FakeEnv()).run([A])


def test_config_errors():
    with pytest.raises(ConfigError, match="best:K"):
        EpisodeConfig(turns=2, iterations=2, history="all")
    with pytest.raises(ConfigError, match="extraction"):
        EpisodeConfig(extraction="middle")
    with pytest.raises(ConfigError, match="at least 1"):
        EpisodeConfig(turns=0)
