"""One full step of the drkernel preset on bundled problems, judged by the interpreter environment.

A random tiny model cannot write kernels, so a ForcedPolicy answers from a script (a broken kernel,
the known solution, no code) while the tiny model supplies the tokens' behaviour log-probs, and the
trainer updates that model.
"""

import json
import logging

import pytest
import torch

import tritongym.train.step as step_module
from tritongym.policy.scripted import break_solution
from tritongym.problems import find_problem
from tritongym.train.config import load_config
from tritongym.train.rollout import HFRollout
from tritongym.train.tiny import ForcedPolicy, build_tiny_model, build_tiny_tokenizer
from tritongym.train.trainer import Trainer

SHORT = (
    "=== user ===\nWrite {{solution_class}} in Triton for {{problem_name}}.\n=== feedback ===\n{{feedback}}\nFix it.\n"
)
PROBLEMS = ["01_vector_add", "02_silu"]


def script(messages, call):
    """Turn 0 (calls 0-3 in (problem, sample) order): vector_add sample 0 broken, sample 1 correct;
    silu sample 0 broken, sample 1 no code. Turn 1: a broken answer gets fixed, no code stays no code,
    a correct one stays correct."""
    name = PROBLEMS[0] if PROBLEMS[0] in messages[0]["content"] else PROBLEMS[1]
    solution = find_problem(name).solution
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    if not answers:
        return (
            [f"```python\n{break_solution(solution)}```", f"```python\n{solution}```"][call % 2]
            if (name == PROBLEMS[0] or call % 2 == 0)
            else "no code, sorry"
        )
    if "no code" in answers[-1]:
        return "still no code"
    return f"```python\n{solution}```"


def test_drkernel_step_end_to_end(tmp_path, warm_env, monkeypatch, caplog):
    (tmp_path / "short.txt").write_text(SHORT)
    config = load_config(
        preset="drkernel",
        overrides=[
            f"run.out='{tmp_path / 'run'}'",
            "run.steps=1",
            "run.tensorboard=false",
            "run.eval_timing=false",
            "run.eval_profile=false",
            "rollout.prompts_per_step=2",
            "rollout.samples_per_prompt=2",
            "rollout.turns=2",
            f"rollout.template='{tmp_path / 'short.txt'}'",
            f"rollout.feedback_template='{tmp_path / 'short.txt'}'",
            f"data.names={PROBLEMS}",
            "data.shuffle=false",
            "optim.lr=1e-2",
        ],
    )
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(tokenizer)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    engine = HFRollout(ForcedPolicy(model, tokenizer, script))
    trainer = Trainer(config, env=warm_env, engine=engine, model=model, tokenizer=tokenizer)
    captured = {}
    real_plan = step_module.plan_update

    def spy(rows, old_logp, config, generator):
        plan = real_plan(rows, old_logp, config, generator)
        captured.update(rows=rows, plan=plan, old_logp=old_logp)
        return plan

    monkeypatch.setattr(step_module, "plan_update", spy)
    with caplog.at_level(logging.INFO, logger="tritongym.train.trainer"):
        [metrics] = trainer.fit(progress=False)
    said = [r.getMessage() for r in caplog.records if r.name == "tritongym.train.trainer"]
    # each part of the step is said before its minutes, not after (the progress line shows the same)
    assert said[0] == "step 1 of 1 started"
    assert (
        said[1]
        == f"step 1: generating 2 x 2 answers of up to {config.rollout.max_completion_tokens} tokens, judging them"
    )
    assert said[2] == f"step 1: updating the model on {len(captured['rows'])} rows"
    assert said[3].startswith("step 1 reward ")

    rows, plan = captured["rows"], captured["plan"]
    verdicts = {(r.problem, r.sample, r.turn): r.verdict for r in rows.records}
    assert verdicts == {
        ("01_vector_add", 0, 0): "compile_error",
        ("01_vector_add", 0, 1): "ok",
        ("01_vector_add", 1, 0): "ok",
        ("01_vector_add", 1, 1): "ok",
        ("02_silu", 0, 0): "compile_error",
        ("02_silu", 0, 1): "ok",
        ("02_silu", 1, 0): "no_code",
        ("02_silu", 1, 1): "no_code",
    }
    # each row: the full context, then the answer; the loss mask covers the answer's tokens only
    for i, record in enumerate(rows.records):
        p, c = len(record.prompt_token_ids), len(record.token_ids)
        assert rows.input_ids[i, : p + c].tolist() == record.prompt_token_ids + record.token_ids
        assert torch.nonzero(rows.token_mask[i]).flatten().tolist() == list(range(p - 1, p - 1 + c))
        assert record.token_ids[-1] == tokenizer.eos_token_id
        if record.turn == 1:  # the second turn's context holds the first answer and its feedback
            assert len(record.messages) == 3 and record.messages[1]["role"] == "assistant"
    # VerifiableReward on the CPU: correct = 0.5 + 0.5 x coverage 1 (no timing; honest kernels without a
    # torch_compute/host_read finding: the findings' coverage is 1), failures 0.
    # TRLOO returns-to-go: va s0 [1, 1], va s1 [2, 1], silu s0 [1, 1], silu s1 [0, 0];
    # leave-one-out within (problem, turn): va t0 -1/+1, va t1 0/0, silu t0 +1/-1, t1 +1/-1.
    expected = {
        ("01_vector_add", 0, 0): -1.0,
        ("01_vector_add", 1, 0): 1.0,
        ("01_vector_add", 0, 1): 0.0,
        ("01_vector_add", 1, 1): 0.0,
        ("02_silu", 0, 0): 1.0,
        ("02_silu", 1, 0): -1.0,
        ("02_silu", 0, 1): 1.0,
        ("02_silu", 1, 1): -1.0,
    }
    got = {(r.problem, r.sample, r.turn): float(a) for r, a in zip(rows.records, plan.advantages, strict=True)}
    assert got == pytest.approx(expected)
    # behaviour and trainer log-probs agree (same model, no update yet): MRS keeps everything;
    # on the CPU coverage is not measured and no turn has a lazy finding: PRS keeps everything
    assert plan.keep.all() and metrics["filter/mrs_rejected"] == 0 and metrics["filter/prs_rejected"] == 0
    assert torch.allclose(captured["old_logp"][rows.token_mask], rows.behaviour_logp[rows.token_mask], atol=1e-4)
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    assert metrics["correct_rate"] == pytest.approx(4 / 8) and metrics["verdict/compile_error"] == pytest.approx(2 / 8)
    assert metrics["episode_correct_rate"] == pytest.approx(3 / 4) and metrics["hack_rate"] == 0.0
    assert metrics["reward_mean"] == pytest.approx(4.0 / 8) and metrics["train/optimizer_steps"] == 1
    assert metrics["time/env"] > 0 and metrics["time/generate"] > 0
    out = tmp_path / "run"
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["step"] == 1 and (out / "training_curves.png").stat().st_size > 0
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 8
    assert (out / "checkpoints" / "step-000001" / "state.json").is_file()
