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
    none = runner.invoke(app, ["export-sft", str(traj), "--out", str(out), "--min-speedup", "9.0"])
    assert none.exit_code == 1 and "no turn passed the filters" in _said(none)
    (empty := tmp_path / "empty.jsonl").write_text("")
    nothing = runner.invoke(app, ["export-sft", str(empty), "--out", str(out)])
    assert nothing.exit_code == 1 and "the trajectory files hold no turns" in _said(nothing)
    results = tmp_path / "results.jsonl"  # eval's --out, not a run's trajectories
    results.write_text(json.dumps({"candidate": "a.py", "problem": "softmax", "verdict": "ok"}) + "\n[1]\n")
    wrong = runner.invoke(app, ["export-sft", str(results), "--out", str(out)])
    assert (
        wrong.exit_code == 2
        and f"{results}:1: not a trajectory record (unknown trajectory record fields: " in _said(wrong)
    )
    assert "a bench or train run's trajectories.jsonl holds one per turn" in _said(wrong)
    results.write_text("[1]\n{}\n")
    wrong = runner.invoke(app, ["export-sft", str(results), "--out", str(out)])
    assert wrong.exit_code == 2 and f"{results}:1: not a trajectory record (a list, not an object)" in _said(wrong)


def test_bad_settings_name_the_setting_and_exit_2(tmp_path):
    """A typo'd key gets the nearest known name; counts that cannot run and a model that is not there
    are refused before any work, naming the setting, without a traceback."""
    typo = tmp_path / "typo.toml"
    typo.write_text("[run]\nstpes = 2\n[modle]\nname = 'x'\n")
    (tmp_path / "file").write_text("")
    cases = [
        (["train", "--config", str(typo)], "unknown section(s): modle (did you mean model?)"),
        (["train", "--set", "run.stpes=2"], "unknown field(s) of [run]: run.stpes (did you mean run.steps?)"),
        (["train", "--set", "optim.zzz=1"], "unknown field(s) of [optim]: optim.zzz; known:"),
        (["train", "--steps", "0"], "run.steps must be at least 1, not 0"),
        (["train", "--steps", "-2"], "run.steps must be at least 1, not -2"),
        (["train", "--set", "run.eval_every=-1"], "run.eval_every must be at least 0, not -1"),
        (["sft", "--data", str(typo), "--set", "run.epochs=0"], "run.epochs must be at least 1, not 0"),
        (["train", "--set", "model.name=/no/such/model"], "model.name /no/such/model: no such model directory"),
        (["train", "--out", str(tmp_path / "file")], "--out " + str(tmp_path / "file") + " is a file"),
        (["sft", "--data", str(typo), "--out", str(tmp_path / "file" / "x")], "cannot create the directory"),
        (["export-sft", str(typo), "--out", str(tmp_path / "file" / "x.jsonl")], "cannot create its directory"),
    ]
    for args, message in cases:
        result = runner.invoke(app, [*args, "--no-progress"] if args[0] != "export-sft" else args)
        assert result.exit_code == 2, (args, result.output)
        assert message in _said(result) and "Traceback" not in result.output, (args, result.output)
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_finishes_the_step_saves_it_and_resume_goes_on(tmp_path, monkeypatch):
    """The first Ctrl-C lets the step under way finish, saves its checkpoint (checkpoint_every is 0,
    so nothing else would be saved before the end) and exits 130; --resume continues from it."""
    import signal

    from tritongym.train import trainer as trainer_module
    from tritongym.train.checkpoint import latest_checkpoint

    real_step = trainer_module.rl_step

    def interrupted_in_step_one(trainer, step, rollout):
        if step == 1:
            signal.raise_signal(signal.SIGINT)  # as a terminal's Ctrl-C, in the middle of the step
        return real_step(trainer, step, rollout)

    monkeypatch.setattr(trainer_module, "rl_step", interrupted_in_step_one)
    out = tmp_path / "run"
    args = ["train", "--preset", "kernel-coder", "--out", str(out), "--steps", "2", "--no-progress",
            "--set", "rollout.prompts_per_step=1", "--set", "rollout.samples_per_prompt=2",
            "--set", "rollout.max_completion_tokens=4", "--set", "rollout.max_prompt_tokens=64",
            "--set", "run.tensorboard=false", "--set", "run.plot=false"]  # fmt: skip
    stopped = runner.invoke(app, args)
    assert stopped.exit_code == 130, stopped.output
    assert "interrupted after step 1" in _said(stopped) and "--resume goes on from there" in _said(stopped)
    assert latest_checkpoint(out).name.endswith("1") and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2] and latest_checkpoint(out).name.endswith("2")
