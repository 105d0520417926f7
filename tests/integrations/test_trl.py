"""TRL: two GRPOTrainer steps on bundled problems with the interpreter environment, and the reward,
dataset and tool environment on their own.

The model is a tiny randomly initialised Llama whose vocabulary holds whole answers (a bundled
solution, a hack, text without code) as single tokens, so random sampling yields real, varied
verdicts in a few tokens; nothing is downloaded.
"""

import asyncio
import json
from concurrent.futures import Future
from pathlib import Path

import pytest

pytest.importorskip("trl")

import torch
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast, TrainerCallback

from helpers import DEVICE, small_problem
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.integrations.scoring import Scorer, problem_from_columns
from tritongym.integrations.trl import (
    AsyncKernelReward,
    KernelEnvironment,
    KernelReward,
    completion_text,
    kernel_dataset,
    kernel_environment_factory,
)
from tritongym.rewards import FormatReward
from tritongym.train.tiny import build_tiny_model

HACKS = Path(__file__).parents[1] / "adversarial" / "candidates"
CONFIG = EvalConfig(device=DEVICE, trials=2)
PROBLEMS = [small_problem("vector_add"), small_problem("silu")]


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


ANSWERS = {
    "solution_vector_add": fenced(PROBLEMS[0].solution),
    "solution_silu": fenced(PROBLEMS[1].solution),
    "hack": fenced((HACKS / "pytorch_only.py").read_text()),
    "no_code": "I would use a Triton kernel.",
}


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    for answer in ANSWERS.values():
        vocab[answer] = len(vocab)
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    return tokenizer


def tiny_model(tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    model = build_tiny_model(tokenizer, hidden_size=16, layers=1, heads=2)
    with torch.no_grad():  # uniform over the vocabulary (padding and unknown words are suppressed)
        model.lm_head.weight.zero_()
    return model


class Recorder(TrainerCallback):
    """What TRL logged at every step: each completion with its reward, and the step's mean reward."""

    def __init__(self):
        self.trainer = None
        self.steps = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "rewards/kernel_reward/mean" in logs:
            logged = self.trainer._logs
            self.steps.append(
                {
                    "prompts": list(logged["prompt"]),
                    "completions": list(logged["completion"]),
                    "rewards": list(logged["rewards"]["kernel_reward"]),
                    "verdicts": list(logged["extra"]["verdict"]),
                    "mean": logs["rewards/kernel_reward/mean"],
                }
            )


def test_two_grpo_steps_log_the_rewards_tritongym_computes(env, tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = tiny_tokenizer()
    dataset = kernel_dataset(PROBLEMS)
    reward = KernelReward(env, config=CONFIG)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=2,
        learning_rate=1e-3,
        logging_steps=1,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        seed=0,
        log_completions=False,
        generation_kwargs={"suppress_tokens": [0, 2]},
    )
    recorder = Recorder()
    trainer = GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[recorder],
    )
    recorder.trainer = trainer
    trainer.train()

    assert len(recorder.steps) == 2
    by_prompt = {json.dumps(row["prompt"]): problem for row, problem in zip(dataset, PROBLEMS, strict=True)}
    scorer = Scorer(env, config=CONFIG)
    seen = set()
    for step in recorder.steps:
        problems = [by_prompt[json.dumps(p)] for p in step["prompts"]]
        texts = [completion_text(c) for c in step["completions"]]
        scores = scorer.score(problems, texts)
        assert step["rewards"] == pytest.approx([s.reward for s in scores])
        assert step["verdicts"] == [s.verdict for s in scores]
        assert step["mean"] == pytest.approx(sum(step["rewards"]) / len(step["rewards"]))
        seen.update(step["verdicts"])
    assert len(seen) >= 2, f"the random policy produced one verdict only: {seen}"


class StubEnv:
    """An Env whose evaluations are scripted: a result per candidate text, or an exception."""

    def __init__(self, outcomes):
        self.outcomes = outcomes
        self.submitted = []

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        self.submitted.append((problem.name, candidate))
        if candidate.strip() == "class ModelNew: refused":
            raise ConnectionRefusedError("no service at this address")
        future = Future()
        outcome = self.outcomes[candidate.strip()]
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
        return future


def result(verdict: Verdict, correct: bool = False) -> EvalResult:
    return EvalResult(problem="p", verdict=verdict, feedback=f"verdict {verdict.value}", correct=correct)


def answer(code: str) -> str:
    return f"<think>plan</think>\n```python\n{code}\n```"


OUTCOMES = {
    "class ModelNew: ok": result(Verdict.OK, correct=True),
    "class ModelNew: infra": result(Verdict.INFRASTRUCTURE_ERROR),
    "class ModelNew: hack": result(Verdict.HACK_NO_TRITON),
    "class ModelNew: down": ConnectionError("service unreachable"),
}


def columns(n):
    p = PROBLEMS[0]
    return {"problem": [p.name] * n, "problem_source": [p.source] * n, "entry_point": [p.entry_point] * n}


def test_rewards_come_back_in_input_order_with_none_for_infrastructure_errors():
    env = StubEnv(OUTCOMES)
    reward = KernelReward(env, format_reward=FormatReward(), format_weight=0.1)
    texts = [answer("class ModelNew: infra"), answer("class ModelNew: ok"), "no code", answer("class ModelNew: down")]
    texts += [answer("class ModelNew: hack"), answer("class ModelNew: refused")]
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    metrics, extra = {}, {}
    out = reward(
        [None] * 6,
        completions,
        **columns(6),
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    # infrastructure errors are None although their format earned 1.0: no training signal at all
    # ok: 0.5 correct + 0.5 coverage (unprofiled, no torch_compute/host_read finding: 1), plus its format
    assert out == [None, pytest.approx(1.0 + 0.1), 0.0, None, pytest.approx(-1.0 + 0.1), None]
    infra = "infrastructure_error"
    assert extra["verdict"] == [infra, "ok", "no_code", infra, "hack_no_triton", infra]
    assert metrics == {"kernel_reward/correct": pytest.approx(1 / 6), "kernel_reward/infrastructure_errors": 0.5}
    assert len(env.submitted) == 5  # the answer without code was never evaluated


def test_the_async_reward_gives_the_same_rewards():
    texts = [answer("class ModelNew: ok"), answer("class ModelNew: infra"), "no code"]
    sync = KernelReward(StubEnv(OUTCOMES))([None] * 3, texts, **columns(3))
    asynchronous = asyncio.run(AsyncKernelReward(StubEnv(OUTCOMES))([None] * 3, texts, **columns(3)))
    assert asynchronous == sync == [1.0, None, 0.0]


def test_trl_sees_the_async_reward_as_a_coroutine_and_names_both_by_their_name():
    from trl.trainer.utils import get_callable_name, is_async_callable

    reward = AsyncKernelReward(StubEnv(OUTCOMES), name="kernels")
    assert is_async_callable(reward) and not is_async_callable(KernelReward(StubEnv(OUTCOMES)))
    assert get_callable_name(reward) == "kernels"


def test_the_dataset_holds_a_conversational_prompt_and_the_problem_columns():
    dataset = kernel_dataset([PROBLEMS[0].with_sizes()], small=True)
    row = dataset[0]
    assert row["prompt"][-1]["role"] == "user" and "ModelNew" in row["prompt"][-1]["content"]
    assert row["problem"] == "01_vector_add" and row["problem_source"] == PROBLEMS[0].source
    assert row["entry_point"] == "Model"
    # what was shrunk travels to the reward, which judges the second size from it (Problem.resized)
    assert json.loads(row["problem_shrunk"]) == {"n": [16777216, 1000]}
    judged = problem_from_columns(row["problem"], row["problem_source"], row["entry_point"], row["problem_shrunk"])
    assert judged.resized().source == PROBLEMS[0].resized().source
    assert problem_from_columns(row["problem"], row["problem_source"]).resized() is None  # an older dataset
    with pytest.raises(ValueError, match="no problems"):
        kernel_dataset([])


def test_a_kernelbook_row_keeps_its_entry_point_from_table_to_reward(env, tmp_path):
    from test_kernelbook import REFERENCE, SOLUTION

    from tritongym.problems import load_table

    table = tmp_path / "book.jsonl"
    table.write_text(json.dumps({"uuid": "ss", "python_code": REFERENCE, "entry_point": "ScaledShift"}) + "\n")
    dataset = kernel_dataset(load_table(table))
    row = dataset[0]
    assert row["entry_point"] == "ScaledShift" and "ScaledShiftNew" in row["prompt"][-1]["content"]
    columns = {k: [row[k]] for k in ("problem", "problem_source", "entry_point")}
    completion = [{"role": "assistant", "content": fenced(SOLUTION)}]
    assert KernelReward(env, config=CONFIG)([row["prompt"]], [completion], **columns) == [1.0]


def test_the_tool_environment_scores_the_best_evaluation_and_keeps_to_its_budget():
    factory = kernel_environment_factory(StubEnv(OUTCOMES), max_evaluations=2)
    environment = factory()
    assert isinstance(environment, KernelEnvironment)
    environment.reset(**{k: v[0] for k, v in columns(1).items()}, prompt=[])
    assert environment.get_reward() == 0.0  # no evaluation: an answer without code
    assert "hack_no_triton" in asyncio.run(environment.evaluate_kernel("class ModelNew: hack"))
    assert "Verdict: ok" in asyncio.run(environment.evaluate_kernel("class ModelNew: ok"))
    assert "No evaluations left" in asyncio.run(environment.evaluate_kernel("class ModelNew: ok"))
    assert environment.get_reward() == -1.0  # a hack in the rollout is paid, whatever came after (red team 5 #6)
    environment.reset(**{k: v[0] for k, v in columns(1).items()})
    for code in ("class ModelNew: infra", "class ModelNew: ok"):
        asyncio.run(environment.evaluate_kernel(code))
    assert environment.get_reward() == 1.0
    environment.reset(**{k: v[0] for k, v in columns(1).items()})
    asyncio.run(environment.evaluate_kernel("class ModelNew: infra"))
    assert environment.get_reward() is None


def test_the_last_evaluation_decides_when_asked_and_bad_settings_are_refused():
    scorer = Scorer(StubEnv(OUTCOMES))
    environment = KernelEnvironment(scorer, reward_of="last")
    environment.reset(**{k: v[0] for k, v in columns(1).items()})
    for code in ("class ModelNew: ok", "class ModelNew: hack"):
        asyncio.run(environment.evaluate_kernel(code))
    assert environment.get_reward() == -1.0
    with pytest.raises(RuntimeError, match="before reset"):
        asyncio.run(KernelEnvironment(scorer).evaluate_kernel("x"))
    with pytest.raises(ValueError, match="reward_of"):
        KernelEnvironment(scorer, reward_of="mean")
    with pytest.raises(ValueError, match="max_evaluations"):
        KernelEnvironment(scorer, max_evaluations=0)


def test_the_tool_has_the_schema_trl_builds_from_its_signature_and_docstring():
    from transformers.utils import get_json_schema

    schema = get_json_schema(KernelEnvironment.evaluate_kernel)
    assert schema["function"]["name"] == "evaluate_kernel"
    assert schema["function"]["parameters"]["required"] == ["code"]
    assert "ModelNew" in schema["function"]["parameters"]["properties"]["code"]["description"]


def tool_call(code: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "evaluate_kernel", "arguments": {"code": code}}) + "\n</tool_call>"


def tool_calling_tokenizer(answers) -> PreTrainedTokenizerFast:
    """TRL's own Qwen2.5 chat template (it knows how to parse its tool calls) over a word-level vocabulary."""
    from importlib import resources

    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<pad>": 0, "<|im_end|>": 1, "<unk>": 2, "<|im_start|>": 3}
    for text in answers:
        vocab[text] = len(vocab)
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        eos_token="<|im_end|>",
        unk_token="<unk>",
        padding_side="left",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = (resources.files("trl") / "chat_templates" / "qwen2_5.jinja").read_text()
    return tokenizer


class EnvironmentRecorder(TrainerCallback):
    def __init__(self):
        self.trainer, self.steps = None, []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "rewards/KernelEnvironment/mean" in logs:
            environments = self.trainer.environments
            self.steps.append(
                {
                    "logged": list(self.trainer._logs["rewards"]["KernelEnvironment"]),
                    "own": [e.get_reward() for e in environments],
                    "verdicts": [[s.verdict for s in e.scores] for e in environments],
                    "calls": logs["tools/call_frequency"],
                }
            )


def test_grpo_with_the_tool_environment_rewards_rollouts_by_their_evaluations(tmp_path, monkeypatch):
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    answers = [tool_call("class ModelNew: ok"), tool_call("class ModelNew: hack"), "Done."]
    tokenizer = tool_calling_tokenizer(answers)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=512,
        max_tool_calling_iterations=2,
        learning_rate=1e-3,
        logging_steps=1,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        seed=0,
        generation_kwargs={"suppress_tokens": [0, 2, 3]},
    )
    recorder = EnvironmentRecorder()
    trainer = GRPOTrainer(
        model=tiny_model(tokenizer),
        args=args,
        train_dataset=kernel_dataset(PROBLEMS[:1]),
        processing_class=tokenizer,
        environment_factory=kernel_environment_factory(StubEnv(OUTCOMES), max_evaluations=3),
        callbacks=[recorder],
    )
    recorder.trainer = trainer
    trainer.train()

    (step,) = recorder.steps
    assert step["calls"] > 0 and any(step["verdicts"]), step
    assert all(len(v) <= 3 for v in step["verdicts"])  # the budget holds even for concurrent calls
    assert step["logged"] == pytest.approx(step["own"])  # TRL's reward is the environment's
    for verdicts, reward in zip(step["verdicts"], step["own"], strict=True):
        best = -1.0 if "hack_no_triton" in verdicts else (1.0 if "ok" in verdicts else (-1.0 if verdicts else 0.0))
        assert reward == best
