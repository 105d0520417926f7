"""The training commands through the CLI (in-process)."""

import json

from typer.testing import CliRunner

from tritongym.agent.records import TurnRecord, write_records
from tritongym.cli import app

runner = CliRunner()


def test_train_one_step_with_the_tiny_model(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "train",
            "--preset",
            "kernel-coder",
            "--out",
            str(out),
            "--steps",
            "1",
            "--no-progress",
            "--set",
            "rollout.prompts_per_step=1",
            "--set",
            "rollout.samples_per_prompt=2",
            "--set",
            "rollout.max_completion_tokens=4",
            "--set",
            "run.tensorboard=false",
            "--set",
            "rollout.max_prompt_tokens=64",
        ],
    )
    assert result.exit_code == 0, result.output
    [row] = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # the kernel-coder prompt is longer than 64 tokens: nothing is generated, the answers are empty
    # and cut off ("length"), and nothing trains
    assert row["step"] == 1 and row["turns"] == 2 and row["truncated_rate"] == 1.0
    assert row["rows_trained"] == 0 and row["train/optimizer_steps"] == 0
    config = json.loads((out / "config.json").read_text())
    assert config["rollout"]["template"] == "kernel-coder" and config["run"]["steps"] == 1


def _said(result) -> str:
    return " ".join(result.output.split())


def test_usage_errors_exit_2(tmp_path):
    result = runner.invoke(app, ["train", "--set", "filters.mrs=sometimes"])
    assert result.exit_code == 2 and "filters.mrs must be" in _said(result)
    result = runner.invoke(app, ["sft", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "no dataset" in _said(result)
    result = runner.invoke(app, ["export-sft", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "no such trajectory file" in _said(result)


def test_export_sft_command(tmp_path):
    traj = tmp_path / "traj.jsonl"
    messages = [{"role": "user", "content": "write it"}]
    write_records(
        traj,
        [
            TurnRecord("r", "p", 0, 0, messages, "```python\nA\n```", "ok", result={"speedup": 2.0}),
            TurnRecord("r", "p", 1, 0, messages, "```python\nB\n```", "ok", result={"speedup": 0.5}),
            TurnRecord("r", "p", 2, 0, messages, "```python\nC\n```", "mismatch", result={"speedup": 3.0}),
        ],
    )
    out = tmp_path / "sft.jsonl"
    result = runner.invoke(app, ["export-sft", str(traj), "--out", str(out), "--min-speedup", "1.0"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["completion"] for r in rows] == ["```python\nA\n```"]
