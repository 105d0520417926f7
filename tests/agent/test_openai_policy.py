"""The OpenAI policy against the scripted chat-completions server on loopback (real HTTP)."""

import socket

import pytest

from tritongym.errors import ConfigError, PolicyError
from tritongym.policy.base import SamplingConfig
from tritongym.policy.openai import OpenAIConfig, OpenAIPolicy
from tritongym.policy.scripted import NO_SOLUTION, ScriptedPolicy, ScriptServer, break_solution, replay_script
from tritongym.problems import find_problem

SILU, ADD = find_problem("silu"), find_problem("vector_add")


def conversation(problem, turns=0, prefill=""):
    messages = [{"role": "user", "content": f"example:\n{ADD.source}\ntask:\n{problem.source}"}]
    for _ in range(turns):
        messages += [{"role": "assistant", "content": "..."}, {"role": "user", "content": "feedback"}]
    return messages + ([{"role": "assistant", "content": prefill}] if prefill else [])


@pytest.fixture
def server():
    with ScriptServer(ScriptedPolicy([ADD, SILU], replay_script("fix"), name="script-model")) as s:
        yield s


def policy(url, **kw):
    return OpenAIPolicy(OpenAIConfig(model="script-model", base_url=url, **kw))


def test_answers_by_problem_and_turn_with_usage(server):
    with policy(server.url) as p:
        p.check()
        first, second = p.generate([conversation(SILU), conversation(SILU, turns=1)], SamplingConfig(n=2))
    assert len(first) == 2 and break_solution(SILU.solution.strip()) in first[0].text
    assert SILU.solution.strip() in second[0].text and "tl.lod(" not in second[0].text
    assert first[0].finish_reason == "stop" and first[0].prompt_tokens > 0 and first[0].completion_tokens > 0
    usage = p.usage_dict()
    assert usage["requests"] == 2 and usage["failed"] == 0 and usage["completion_tokens"] > 0


def test_the_example_problem_is_not_mistaken_for_the_task(server):
    with policy(server.url) as p:
        (answer,) = p.generate([conversation(SILU, turns=1)], SamplingConfig())[0:1]
    assert "silu_kernel" in answer[0].text


def test_retries_on_429_and_5xx():
    with (
        ScriptServer(ScriptedPolicy([SILU], replay_script("replay")), errors=(503, 429)) as server,
        policy(server.url, max_retries=3) as p,
    ):
        (completions,) = p.generate([conversation(SILU)], SamplingConfig())
    assert server.requests == 3 and SILU.solution.strip() in completions[0].text


def test_exhausted_retries_give_error_completions():
    with (
        ScriptServer(ScriptedPolicy([SILU], replay_script("replay")), errors=(500, 500, 500)) as server,
        policy(server.url, max_retries=1) as p,
    ):
        (completions,) = p.generate([conversation(SILU)], SamplingConfig(n=2))
    assert [c.finish_reason for c in completions] == ["error", "error"]
    assert "500" in completions[0].error and p.usage_dict()["failed"] == 1


def test_refused_key_is_fatal():
    with (
        ScriptServer(ScriptedPolicy([SILU], replay_script()), errors=(401,)) as server,
        policy(server.url) as p,
        pytest.raises(PolicyError, match="refused"),
    ):
        p.generate([conversation(SILU)], SamplingConfig())


def test_unreachable_server_is_a_clear_error():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        policy(f"http://127.0.0.1:{port}/v1", max_retries=0) as p,
        pytest.raises(PolicyError, match="cannot reach the model server"),
    ):
        p.check()


def test_prefill_is_continued_or_dropped(server):
    with policy(server.url) as p:
        request = p._request(conversation(SILU, prefill="<think>"), SamplingConfig(stop=("</answer>",), seed=3))
        assert request["extra_body"] == {"continue_final_message": True, "add_generation_prompt": False}
        assert request["messages"][-1]["role"] == "assistant" and request["stop"] == ["</answer>"]
        assert request["seed"] == 3
    with policy(server.url, continue_prefill=False) as p:
        request = p._request(conversation(SILU, prefill="<think>"), SamplingConfig())
        assert request["messages"][-1]["role"] == "user" and "extra_body" not in request


def test_reasoning_format_and_problems_without_solution():
    text = replay_script("replay", reasoning=True)(SILU, 0)
    assert "</think>" in text and "<answer>" in text and text.index("</think>") < text.index("<answer>")
    unsolved = ScriptedPolicy([], replay_script())
    assert unsolved.answer(conversation(SILU)) == NO_SOLUTION


def test_config_errors():
    with pytest.raises(ConfigError, match="model name"):
        OpenAIConfig(model="")
    with pytest.raises(ConfigError, match="script must be"):
        replay_script("nope")
