"""Templates: the bundled ones parse and fill; user files are checked for sections and placeholders."""

import pytest

from tritongym.agent.prompts import Prompts, bundled_templates, fill, load_template, parse_template
from tritongym.errors import ConfigError
from tritongym.problems import Problem, find_problem

KERNELBOOK_ROW = Problem(
    name="row7",
    source="import torch\nclass Scaler(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n",
    entry_point="Scaler",
)


def test_bundled_templates_are_listed():
    assert {"kernelbench", "kernel-coder", "drkernel-feedback"} <= set(bundled_templates())


def test_kernelbench_prompt_has_example_architecture_and_class():
    problem = find_problem("silu")
    messages = Prompts("kernelbench").initial(problem)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    example = find_problem("vector_add")
    assert example.source.strip() in user and example.solution.strip() in user
    assert user.index(example.source.strip()) < user.index(problem.source.strip())
    assert "ModelNew" in user and "{{" not in user


def test_kernelbook_problem_asks_for_its_own_class():
    user = Prompts("kernelbench").initial(KERNELBOOK_ROW)[1]["content"]
    assert "class named ScalerNew" in user and "signature as Scaler" in user


def test_kernel_coder_has_think_prefill_and_answer_tags():
    prompts = Prompts("kernel-coder")
    system = prompts.initial(KERNELBOOK_ROW)[0]["content"]
    assert "<think>" in system and "<answer>" in system
    assert prompts.prefill.strip() == "<think>"


def test_feedback_message_carries_the_rendered_result():
    message = Prompts().feedback(KERNELBOOK_ROW, "Verdict: mismatch.")
    assert message["role"] == "user"
    assert "Verdict: mismatch." in message["content"] and "ScalerNew" in message["content"]


def test_user_template_file(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(
        "notes\n=== user ===\nSolve {{problem_name}} as {{solution_class}}.\n=== feedback ===\n{{feedback}}\n"
    )
    prompts = Prompts(str(path), str(path))
    assert prompts.initial(KERNELBOOK_ROW) == [{"role": "user", "content": "Solve row7 as ScalerNew."}]
    assert prompts.feedback(KERNELBOOK_ROW, "ok")["content"] == "ok"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no sections", "no '=== section ==='"),
        ("=== usr ===\nx", "unknown section 'usr'"),
        ("=== user ===\n{{arch}}", "unknown placeholder {{arch}}"),
        ("=== user ===\na\n=== user ===\nb", "appears twice"),
    ],
)
def test_bad_templates_are_refused(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_template(text, "t")


def test_missing_sections_and_unknown_names():
    with pytest.raises(ConfigError, match="no 'user' section"):
        Prompts("drkernel-feedback")
    with pytest.raises(ConfigError, match="no 'feedback' section"):
        Prompts("kernelbench", "kernel-coder")
    with pytest.raises(ConfigError, match="no template 'nope'"):
        load_template("nope")


def test_fill_does_not_rescan_values():
    assert fill("{{feedback}}", {"feedback": "{{architecture}}"}) == "{{architecture}}"
