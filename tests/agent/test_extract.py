"""Extraction policies: first, last, answer tags (falling back to the last block), the class check."""

import pytest

from tritongym.agent.extract import extract
from tritongym.errors import ConfigError

GOOD_1 = "class ModelNew(nn.Module):\n    version = 1\n"
GOOD_2 = "class ModelNew(nn.Module):\n    version = 2\n"
TWO_BLOCKS = f"Draft:\n```python\n{GOOD_1}```\nFinal:\n```python\n{GOOD_2}```\n"


def test_first_and_last_blocks():
    assert extract(TWO_BLOCKS, "ModelNew", "first").code == GOOD_1
    assert extract(TWO_BLOCKS, "ModelNew", "last").code == GOOD_2


def test_answer_tags_pick_the_block_inside():
    text = f"<think>try\n```python\n{GOOD_1}```\n</think><answer>\n```python\n{GOOD_2}```\n</answer> trailing"
    assert extract(text, "ModelNew", "answer").code == GOOD_2


def test_answer_tags_without_fence_use_their_text():
    text = f"<think>x</think><answer>\n{GOOD_1}</answer>"
    assert extract(text, "ModelNew", "answer").code.strip() == GOOD_1.strip()


def test_answer_falls_back_to_the_last_block():
    assert extract(TWO_BLOCKS, "ModelNew", "answer").code == GOOD_2


def test_the_needed_class_must_be_present():
    text = "```python\nclass Model(nn.Module):\n    pass\n```"
    outcome = extract(text, "ModelNew", "last")
    assert outcome.code is None
    assert "does not define class ModelNew" in outcome.feedback


def test_kernelbook_class_name():
    text = "```python\nclass ScalerNew(torch.nn.Module):\n    pass\n```"
    assert extract(text, "ScalerNew").code is not None
    assert extract(text, "ModelNew").code is None


@pytest.mark.parametrize("policy", ["first", "last", "answer"])
def test_no_code_is_an_outcome_with_feedback(policy):
    outcome = extract("I would use a kernel here.", "ModelNew", policy)
    assert outcome.code is None
    assert "No code block" in outcome.feedback and "class ModelNew" in outcome.feedback


def test_cut_off_answer_says_so():
    outcome = extract("```python\nclass ModelNew(nn.Module):\n", "ModelNew", "last", finish_reason="length")
    assert outcome.code is None and "cut off" in outcome.feedback


def test_unknown_policy_is_a_config_error():
    with pytest.raises(ConfigError, match="extraction policy"):
        extract(TWO_BLOCKS, "ModelNew", "middle")
