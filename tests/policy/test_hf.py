"""The hf policy on a tiny random Llama and a tokenizer trained in the test (no downloads)."""

import pytest
import torch

from tritongym.errors import ConfigError
from tritongym.policy import SamplingConfig
from tritongym.policy.hf import HFPolicy
from tritongym.train.tiny import build_tiny_model, build_tiny_tokenizer


@pytest.fixture(scope="module")
def policy():
    tokenizer = build_tiny_tokenizer()
    return HFPolicy(build_tiny_model(tokenizer), tokenizer, name="tiny")


def _reference_logprobs(policy, prompt, tokens, temperature, top_p=1.0):
    """Log-probs of ``tokens`` after ``prompt``, from an unpadded forward, temperature/top-p applied by hand."""
    ids = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logits = policy.model(ids).logits[0, len(prompt) - 1 : -1].double() / temperature
    if top_p < 1:
        probs = torch.softmax(logits, -1)
        order = probs.sort(dim=-1, descending=True)
        outside = order.values.cumsum(-1) - order.values >= top_p  # tokens after the nucleus is full
        logits = logits.scatter(-1, order.indices, torch.where(outside, float("-inf"), order.values.log()))
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens)[:, None])[:, 0]


def test_batched_samples_carry_prompt_tokens_and_behaviour_logprobs(policy):
    conversations = [
        [{"role": "user", "content": "hi"}],
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "write a softmax kernel please"}],
    ]
    sampling = SamplingConfig(n=3, temperature=0.7, top_p=0.9, max_tokens=6, seed=1)
    out = policy.generate(conversations, sampling)
    assert [len(samples) for samples in out] == [3, 3]
    for conversation, samples in zip(conversations, out, strict=True):
        expected_prompt = policy.tokenizer.apply_chat_template(conversation, add_generation_prompt=True)["input_ids"]
        for c in samples:
            assert c.prompt_token_ids == list(expected_prompt) and c.prompt_tokens == len(expected_prompt)
            assert 1 <= len(c.token_ids) == len(c.logprobs) == c.completion_tokens <= 6
            assert c.finish_reason == ("stop" if c.token_ids[-1] == policy.tokenizer.eos_token_id else "length")
            assert c.text == policy.tokenizer.decode(c.token_ids, skip_special_tokens=True)
            expected = _reference_logprobs(policy, c.prompt_token_ids, c.token_ids, 0.7, 0.9)
            assert torch.allclose(torch.tensor(c.logprobs, dtype=torch.double), expected, atol=1e-4)
    # the same seed gives the same samples
    again = policy.generate(conversations, sampling)
    assert [[c.token_ids for c in s] for s in again] == [[c.token_ids for c in s] for s in out]


def test_prefill_continues_the_assistant_message(policy):
    conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<think>"}]
    [[c]] = policy.generate([conversation], SamplingConfig(temperature=1.0, max_tokens=4, seed=0))
    rendered = policy.tokenizer.decode(c.prompt_token_ids)
    assert rendered.endswith("<|im_start|>assistant\n<think>")
    assert not c.text.startswith("<think>")
    expected = _reference_logprobs(policy, c.prompt_token_ids, c.token_ids, 1.0)
    assert torch.allclose(torch.tensor(c.logprobs, dtype=torch.double), expected, atol=1e-4)


def test_greedy_is_deterministic_and_reports_raw_logprobs(policy):
    conversation = [{"role": "user", "content": "row sum"}]
    [[a]] = policy.generate([conversation], SamplingConfig(temperature=0.0, max_tokens=5))
    [[b]] = policy.generate([conversation], SamplingConfig(temperature=0.0, max_tokens=5))
    assert a.token_ids == b.token_ids
    expected = _reference_logprobs(policy, a.prompt_token_ids, a.token_ids, 1.0)
    assert torch.allclose(torch.tensor(a.logprobs, dtype=torch.double), expected, atol=1e-4)


def test_completion_ends_at_eos_or_stop_string(policy):
    tok = policy.tokenizer
    words = tok("def kernel(x):\n    return x", add_special_tokens=False).input_ids
    eos = tok.eos_token_id
    logprobs = [-float(i) for i in range(len(words) + 3)]
    c = policy._completion([5], [*words, eos, 7, 7], logprobs, SamplingConfig())
    assert (c.token_ids, c.finish_reason, c.text) == ([*words, eos], "stop", "def kernel(x):\n    return x")
    assert c.logprobs == logprobs[: len(words) + 1]
    c = policy._completion([5], words, logprobs, SamplingConfig(stop=("(x)",)))
    assert c.text == "def kernel" and c.finish_reason == "stop"
    assert "(x)" in tok.decode(c.token_ids) and "(x)" not in tok.decode(c.token_ids[:-1])
    c = policy._completion([5], words, logprobs, SamplingConfig(stop=("never",)))
    assert c.finish_reason == "length" and c.token_ids == words


def test_needs_a_chat_template_and_a_message():
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(tokenizer)
    policy = HFPolicy(model, tokenizer)
    with pytest.raises(ConfigError, match="at least one message"):
        policy.prompt_ids([])
    tokenizer.chat_template = None
    with pytest.raises(ConfigError, match="no chat template"):
        HFPolicy(model, tokenizer)


def test_load_from_a_saved_directory(tmp_path, policy):
    from tritongym.policy.hf import load_hf_policy
    from tritongym.train.config import ModelSection
    from tritongym.train.model import load_model

    policy.model.save_pretrained(tmp_path)
    policy.tokenizer.save_pretrained(tmp_path)
    loaded = load_hf_policy(str(tmp_path), dtype="float32", device="cpu")
    assert loaded.name == str(tmp_path)
    conversation = [{"role": "user", "content": "hi"}]
    [[a]] = loaded.generate([conversation], SamplingConfig(temperature=0.0, max_tokens=4))
    [[b]] = policy.generate([conversation], SamplingConfig(temperature=0.0, max_tokens=4))
    assert a.token_ids == b.token_ids
    # a random model from the saved architecture, one layer instead of two
    model, tokenizer = load_model(
        ModelSection(name=str(tmp_path), random_init=True, config_overrides={"num_hidden_layers": 1})
    )
    assert model.config.num_hidden_layers == 1 and len(tokenizer) == len(policy.tokenizer)
