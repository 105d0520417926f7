"""A hub model name on a machine without network: the error comes at once (no ~50 s of transformers'
retries) and names the fix; a machine whose Hub answers loads as before. The network is disabled by
monkeypatching the resolver, never by waiting."""

import socket
import time

import pytest
import torch
from typer.testing import CliRunner

from tritongym.cli import app
from tritongym.errors import ConfigError
from tritongym.policy import hf
from tritongym.train.tiny import build_tiny_tokenizer

MISSING = "nonexistent-org/no-such-model-tritongym"


@pytest.fixture
def no_network(monkeypatch):
    """Name resolution fails as on a machine without network, and any retry's back-off fails the test."""
    from huggingface_hub import constants

    def unresolvable(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def no_retry(seconds):
        raise AssertionError(f"slept {seconds} s: a retry of the Hub")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(socket, "getaddrinfo", unresolvable)
    monkeypatch.setattr(time, "sleep", no_retry)


def test_unreachable_hub_fails_at_once_naming_the_fix(no_network):
    assert "cannot be reached" in hf.hub_unreachable()
    with pytest.raises(ConfigError) as caught:
        hf.load_hf_policy(MISSING, what="--model")
    message = str(caught.value)
    assert message.startswith(f"--model {MISSING}: no such local directory and not in the Hugging Face cache")
    assert "cannot be reached" in message and "local model directory" in message and "HF_HUB_OFFLINE=1" in message


def test_train_names_the_setting_of_an_unreachable_model_or_tokenizer(no_network, tmp_path):
    runner = CliRunner()
    for setting in ("model.name", "model.tokenizer"):
        result = runner.invoke(app, ["train", "--set", f"{setting}={MISSING}", "--out", str(tmp_path), "--no-progress"])
        said = " ".join(result.output.split())
        assert result.exit_code == 2, result.output
        assert f"{setting} {MISSING}: no such local directory" in said and "HF_HUB_OFFLINE=1" in said, said


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


def _recording_loaders(monkeypatch, tokenizer):
    """transformers' loaders replaced by the tiny tokenizer and a one-weight module (HFPolicy only
    moves it), recording the keyword arguments they get."""
    import transformers

    calls = []

    def tokenizer_loader(name, **kwargs):
        calls.append(("tokenizer", kwargs))
        return tokenizer

    def model_loader(name, **kwargs):
        calls.append(("model", kwargs))
        return torch.nn.Linear(1, 1)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tokenizer_loader)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", model_loader)
    return calls


def test_a_hub_that_answers_is_asked_as_before(monkeypatch, tokenizer):
    """Online: no local_files_only, and a name the Hub does not have keeps transformers' own reason."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf, "hub_unreachable", lambda: None)
    calls = _recording_loaders(monkeypatch, tokenizer)
    policy = hf.load_hf_policy("some-org/some-model", device="cpu")
    assert policy.name == "some-org/some-model"
    assert [kind for kind, _ in calls] == ["tokenizer", "model"]
    assert all("local_files_only" not in kwargs for _, kwargs in calls)

    import transformers

    def not_on_the_hub(name, **kwargs):
        raise OSError(f"{name} is not a local folder and is not a valid model identifier")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", not_on_the_hub)
    with pytest.raises(ConfigError, match=r"cannot load it as a local model directory or a hub model .*not a valid"):
        hf.load_hf_policy(MISSING)


def test_unreachable_or_offline_hub_loads_from_the_cache(monkeypatch, tokenizer):
    """A model in the cache still loads when the Hub does not answer, and under HF_HUB_OFFLINE without
    asking it: both loaders get local_files_only."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf, "hub_unreachable", lambda: "https://huggingface.co cannot be reached (test)")
    calls = _recording_loaders(monkeypatch, tokenizer)
    hf.load_hf_policy("cached-org/cached-model", device="cpu")
    assert [kwargs.get("local_files_only") for _, kwargs in calls] == [True, True]

    def asked(*args):
        raise AssertionError("the Hub was asked under HF_HUB_OFFLINE")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf, "hub_unreachable", asked)
    calls.clear()
    hf.load_hf_policy("cached-org/cached-model", device="cpu")
    assert [kwargs.get("local_files_only") for _, kwargs in calls] == [True, True]


def test_offline_mode_says_so_when_the_cache_lacks_the_model(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE is set, so only the Hugging Face cache is looked in"):
        hf.load_hf_policy(MISSING)
