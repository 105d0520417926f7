"""SFT: masks cover completion tokens only, the completion loss falls, export-sft filters records."""

import json
import logging

import pytest
import torch

from tritongym.agent.records import TurnRecord, write_records
from tritongym.errors import ConfigError
from tritongym.train.config import SFTConfig, load_config
from tritongym.train.sft import SFTPair, collate, export_sft, load_pairs, mean_completion_loss, run_sft, tokenize_pairs
from tritongym.train.tiny import build_tiny_model, build_tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


def _record(problem, verdict, completion, speedup=None, coverage=None, sample=0):
    result = None if verdict == "no_code" else {"verdict": verdict, "speedup": speedup, "coverage": coverage}
    messages = [{"role": "user", "content": f"write {problem}"}]
    return TurnRecord("run", problem, sample, 0, messages, completion, verdict, result=result, reward=0.0)


def test_masks_cover_the_completion_only(tokenizer):
    pairs = [
        SFTPair([{"role": "user", "content": "row sum"}], "def f(x): return x"),
        SFTPair([{"role": "user", "content": "a"}, {"role": "assistant", "content": "<think>"}], "ok"),
    ]
    items, skipped = tokenize_pairs(pairs, tokenizer, max_tokens=4096)
    assert skipped == 0
    batch = collate(items, tokenizer.pad_token_id)
    for i, (ids, prompt_len) in enumerate(items):
        targets = batch.input_ids[i, 1:][batch.loss_mask[i]].tolist()
        assert targets == ids[prompt_len:]  # exactly the completion tokens, end-of-turn last
        assert targets[-1] == tokenizer.eos_token_id
        completion = tokenizer.decode(targets, skip_special_tokens=True)
        assert completion == pairs[i].completion
    # the prefill is part of the prompt, not of the supervised completion
    assert tokenizer.decode(items[1][0][: items[1][1]]).endswith("assistant\n<think>")
    _, skipped = tokenize_pairs(pairs, tokenizer, max_tokens=5)
    assert skipped == 2


def test_export_then_sft_lowers_the_completion_loss(tmp_path, tokenizer):
    trajectories = tmp_path / "traj.jsonl"
    records = [
        _record("01_vector_add", "ok", "```python\nclass ModelNew: pass\n```", speedup=1.5, coverage=0.9),
        _record("01_vector_add", "ok", "```python\nclass ModelNew: pass\n```", speedup=1.5, coverage=0.9, sample=1),
        _record("02_silu", "ok", "```python\nsilu = x * sigmoid(x)\n```", speedup=0.8, coverage=0.9),
        _record("03_row_sum", "ok", "```python\nrow = x.sum(1)\n```", speedup=None, coverage=None),
        _record("04_softmax", "mismatch", "```python\nwrong\n```", speedup=2.0, coverage=1.0),
        _record("05_layernorm", "no_code", "no code"),
    ]
    write_records(trajectories, records)
    out = tmp_path / "sft.jsonl"
    counts = export_sft(trajectories, out)
    assert counts == {"read": 6, "written": 3, "duplicates": 1, "lazy": 0}
    assert export_sft(trajectories, tmp_path / "fast.jsonl", min_speedup=1.0)["written"] == 1
    assert export_sft(trajectories, tmp_path / "cov.jsonl", min_coverage=0.5)["written"] == 2
    assert export_sft(trajectories, tmp_path / "all.jsonl", verdicts=("ok", "mismatch"))["written"] == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["problem"] for r in rows] == ["01_vector_add", "02_silu", "03_row_sum"]
    assert rows[0]["messages"] == records[0].messages and rows[0]["completion"] == records[0].completion

    config = load_config(
        SFTConfig,
        overrides=[
            f"data.path='{out}'",
            f"run.out='{tmp_path / 'sft'}'",
            "run.epochs=15",
            "run.tensorboard=false",
            "optim.lr=1e-2",
            "optim.micro_batch_size=2",
            "optim.grad_accumulation=2",
        ],
    )
    model = build_tiny_model(tokenizer)
    items, _ = tokenize_pairs(load_pairs(out), tokenizer, 4096)
    before = mean_completion_loss(model, items, tokenizer.pad_token_id, 4)
    history = run_sft(config, model=model, tokenizer=tokenizer, progress=False)
    after = mean_completion_loss(model, items, tokenizer.pad_token_id, 4)
    assert len(history) == 15  # 3 pairs, 4 per optimizer step: one step per epoch
    assert after < 0.5 * before, (before, after)
    assert history[-1]["sft/loss"] < history[0]["sft/loss"]
    assert (tmp_path / "sft" / "checkpoints" / "step-000015" / "model").is_dir()


def test_pairs_from_a_kernelbook_table(tmp_path):
    table = tmp_path / "book.jsonl"
    rows = [
        {"uuid": "a", "python_code": "import torch\nclass Model(torch.nn.Module): pass\n", "triton_code": "T = 1\n"},
        {"uuid": "b", "python_code": "import torch\nclass Model(torch.nn.Module): pass\n"},
    ]
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    [pair] = load_pairs(table)
    assert pair.completion == "```python\nT = 1\n```"
    assert "class Model(torch.nn.Module)" in pair.messages[-1]["content"]
    [pair] = load_pairs(table, template="kernel-coder")
    assert pair.messages[-1] == {"role": "assistant", "content": "<think>"}


def test_sft_dataset_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such SFT dataset"):
        load_pairs(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": "not a list", "completion": "x"}) + "\n")
    with pytest.raises(ConfigError, match="needs 'messages'"):
        load_pairs(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="empty"):
        load_pairs(empty)
    cases = {
        "notjson.jsonl": ('{"messages": [], "completion": "x"}\nnot json\n', r"notjson.jsonl:2: not a JSON line \("),
        "list.jsonl": ("[1, 2]\n", "list.jsonl:1: a row must be a JSON object, not list"),
        "columns.jsonl": ('{"x": 1}\n', r"row 0: no reference source in column 'python_code' \(columns present: x\); "
                          "an SFT dataset is an export-sft JSONL"),
    }  # fmt: skip
    for name, (text, message) in cases.items():  # each a clear error, not a traceback or eval's option
        (tmp_path / name).write_text(text)
        with pytest.raises(ConfigError, match=message) as caught:
            load_pairs(tmp_path / name)
        assert "--source-column" not in str(caught.value)
    with pytest.raises(ConfigError, match="no such trajectory file"):
        export_sft(tmp_path / "none.jsonl", tmp_path / "out.jsonl")
    with pytest.raises(ConfigError, match=r"unknown verdict\(s\) okk; a turn's verdict is one of: ok, "):
        export_sft(tmp_path / "none.jsonl", tmp_path / "typo.jsonl", verdicts=("ok", "okk"))
    assert not (tmp_path / "typo.jsonl").exists()  # refused before anything is written
    with pytest.raises(ConfigError, match="presets are training recipes"):
        load_config(SFTConfig, preset="drkernel")
    assert torch.is_tensor(collate([([1, 2, 3], 1)], 0).input_ids)


def test_sft_resume_repeats_the_uninterrupted_run(tmp_path, tokenizer, caplog):
    data = tmp_path / "pairs.jsonl"
    pairs = [{"messages": [{"role": "user", "content": f"task {i}"}], "completion": f"x = {i}"} for i in range(4)]
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs))

    def config(out, *extra):
        sets = [f"data.path='{data}'", f"run.out='{tmp_path / out}'", "run.epochs=3", "run.tensorboard=false"]
        return load_config(SFTConfig, overrides=[*sets, "optim.lr=1e-2", "optim.micro_batch_size=2", *extra])

    straight = build_tiny_model(tokenizer)
    with caplog.at_level(logging.INFO, logger="tritongym.train.sft"):
        run_sft(config("straight"), model=straight, tokenizer=tokenizer, progress=False)
    said = [r.getMessage() for r in caplog.records if r.name == "tritongym.train.sft"]
    assert [line.rsplit(" ", 1)[0] for line in said] == [f"sft step {n} of 6 loss" for n in range(1, 7)]  # no bar
    first = build_tiny_model(tokenizer)
    run_sft(config("resumed", "run.max_steps=4"), model=first, tokenizer=tokenizer, progress=False)
    resumed = build_tiny_model(tokenizer, seed=1)
    history = run_sft(config("resumed"), model=resumed, tokenizer=tokenizer, resume=True, progress=False)
    assert len(history) == 2  # 2 steps per epoch, 3 epochs: steps 5 and 6 after the checkpoint of step 4
    assert all(torch.equal(a, b) for a, b in zip(straight.parameters(), resumed.parameters(), strict=True))


def test_ctrl_c_in_sft_saves_the_finished_step_and_resume_matches(tmp_path, tokenizer, monkeypatch):
    """A SIGINT in step 4 lets it finish and saves its checkpoint (none is due before the end); the
    resumed run ends with the parameters of an uninterrupted one."""
    import signal

    from tritongym.train import sft as sft_module
    from tritongym.train.interrupt import TrainingInterrupted

    data = tmp_path / "pairs.jsonl"
    pairs = [{"messages": [{"role": "user", "content": f"task {i}"}], "completion": f"x = {i}"} for i in range(4)]
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs))

    def config(out):
        sets = [f"data.path='{data}'", f"run.out='{tmp_path / out}'", "run.epochs=3", "run.tensorboard=false"]
        return load_config(SFTConfig, overrides=[*sets, "optim.lr=1e-2", "optim.micro_batch_size=2"])

    straight = build_tiny_model(tokenizer)
    run_sft(config("straight"), model=straight, tokenizer=tokenizer, progress=False)
    calls, real_loss = [], sft_module.completion_loss

    def interrupted_in_step_four(*args):
        calls.append(1)
        if len(calls) == 4:  # one micro-batch a step
            signal.raise_signal(signal.SIGINT)
        return real_loss(*args)

    monkeypatch.setattr(sft_module, "completion_loss", interrupted_in_step_four)
    with pytest.raises(TrainingInterrupted) as stopped:
        run_sft(config("stopped"), model=build_tiny_model(tokenizer), tokenizer=tokenizer, progress=False)
    assert stopped.value.step == 4 and (tmp_path / "stopped/checkpoints/step-000004/state.json").is_file()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler before is back
    monkeypatch.setattr(sft_module, "completion_loss", real_loss)
    resumed = build_tiny_model(tokenizer, seed=1)
    history = run_sft(config("stopped"), model=resumed, tokenizer=tokenizer, resume=True, progress=False)
    assert len(history) == 2
    assert all(torch.equal(a, b) for a, b in zip(straight.parameters(), resumed.parameters(), strict=True))
