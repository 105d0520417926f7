"""tritongym bench: the whole multi-turn loop over real HTTP on loopback with the local pool, resuming
an interrupted run without repeating work, and clear errors for bad input."""

import json
import socket
from concurrent.futures import Future
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from helpers import DEVICE
from tritongym.agent.episodes import record_key
from tritongym.agent.records import read_records
from tritongym.bench.run import TRAJECTORIES, BenchConfig, parse_ids, run_bench, select_problems
from tritongym.cli import app
from tritongym.errors import ConfigError, ProblemError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.problems.sizes import parse_size_overrides

runner = CliRunner()


class InstantEnv:
    """Judges without running anything: the scripted broken kernel (tl.lod) fails, the rest pass."""

    def __init__(self, infrastructure: bool = False):
        self.submitted: list[str] = []
        self.infrastructure = infrastructure

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        self.submitted.append(problem.name)
        if self.infrastructure:
            verdict = Verdict.INFRASTRUCTURE_ERROR
        else:
            verdict = Verdict.COMPILE_ERROR if "tl.lod(" in candidate else Verdict.OK
        future: Future = Future()
        future.set_result(EvalResult(problem.name, verdict, "judged", compiled=verdict is Verdict.OK,
                                     correct=verdict is Verdict.OK))  # fmt: skip
        return future

    def evaluate_many(self, tasks, config=None):
        raise NotImplementedError

    def close(self):
        pass


CONFIG = BenchConfig(
    policy="scripted", model="scripted-fix", ids="1-3", samples=2, turns=2, small=True,
    eval=EvalConfig(device="cpu", trials=1),
)  # fmt: skip


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "run"
    args = ["bench", "--policy", "scripted", "--ids", "1-2", "--turns", "2", "--out", str(out),
            "--device", DEVICE, "--jobs", "1", "--trials", "1"]  # fmt: skip
    return out, args, runner.invoke(app, args)


def test_cli_multi_turn_over_http_with_the_local_pool(cli_run):
    out, _, result = cli_run
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["model"] == "scripted-fix" and run["problem_names"] == ["01_vector_add", "02_silu"]
    assert run["usage"]["requests"] == 4 and run["usage"]["completion_tokens"] > 0
    records = list(read_records(out / TRAJECTORIES))
    by_problem = {}
    for r in records:
        by_problem.setdefault(r.problem, []).append(r)
    for problem, turns in by_problem.items():
        turns.sort(key=lambda r: r.turn)
        assert [r.verdict for r in turns] in (["compile_error", "ok"], ["runtime_error", "ok"]), problem
        assert turns[0].reward == 0.0 and turns[1].reward == 1.0  # correct and no lazy finding (coverage 1)
        feedback = turns[1].messages[-1]["content"]
        assert "tl.lod" in feedback and "solution.py line" in feedback and "/tmp" not in feedback
        assert turns[1].result["correct"] and turns[1].run_id == run["run_id"]


def test_cli_rerun_resumes_without_new_work(cli_run):
    out, args, _ = cli_run
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "(0 new)" in again.output
    assert len(list(read_records(out / TRAJECTORIES))) == 4


def test_a_run_resumes_from_a_server_at_another_address_but_not_with_other_settings(tmp_path):
    out = tmp_path / "run"
    run_bench(replace(CONFIG, base_url="http://127.0.0.1:8000/v1"), out, env=InstantEnv())
    moved = replace(CONFIG, base_url="http://127.0.0.1:9000/v1")
    assert run_bench(moved, out, env=InstantEnv()).new_records == 0
    assert json.loads((out / "run.json").read_text())["base_url"] == "http://127.0.0.1:9000/v1"
    with pytest.raises(ConfigError, match=r"holds a run with other settings \(temperature: 1.0 -> 0.5\)"):
        run_bench(replace(moved, temperature=0.5), out, env=InstantEnv())


def test_interrupted_run_resumes_where_it_stopped(tmp_path):
    out = tmp_path / "run"
    seen = []

    def interrupt(record):
        seen.append(record)
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_bench(CONFIG, out, env=InstantEnv(), progress=interrupt)
    assert len(list(read_records(out / TRAJECTORIES))) == 5
    with open(out / TRAJECTORIES, "a") as fh:
        fh.write('{"run_id": "cut sh')  # the line an interruption cut short
    env = InstantEnv()
    outcome = run_bench(CONFIG, out, env=env)
    records = list(read_records(out / TRAJECTORIES))
    assert outcome.new_records == 7 and len(env.submitted) == 7 and len(records) == 12
    assert len({record_key(r) for r in records}) == 12
    assert sorted((r.problem, r.sample, r.turn) for r in records) == sorted(
        (p, s, t) for p in ("01_vector_add", "02_silu", "03_row_sum") for s in range(2) for t in range(2)
    )
    # 6 first-turn requests before the interruption, then the 7 missing turns
    assert json.loads((out / "run.json").read_text())["usage"]["requests"] == 13


def test_unscored_turns_are_tried_again(tmp_path):
    out = tmp_path / "run"
    first = run_bench(CONFIG, out, env=InstantEnv(infrastructure=True))
    assert first.unscored == 6 and all(r.reward is None for r in first.records)
    second = run_bench(CONFIG, out, env=InstantEnv())
    records = list(read_records(out / TRAJECTORIES))
    assert second.unscored == 0 and len(records) == 12
    assert all(r.verdict != "infrastructure_error" for r in records)


def test_kernel_coder_format_end_to_end(tmp_path):
    config = BenchConfig(**{**CONFIG.__dict__, "template": "kernel-coder", "extraction": "answer", "samples": 1})
    outcome = run_bench(config, tmp_path / "run", env=InstantEnv())
    assert [r.verdict for r in sorted(outcome.records, key=lambda r: (r.problem, r.turn))] == [
        "compile_error",
        "ok",
    ] * 3
    first = outcome.records[0]
    assert first.messages[-1] == {"role": "assistant", "content": "<think>"}
    assert first.answer_text().startswith("<think>") and "</think>\n<answer>" in first.completion


def test_other_settings_are_refused(tmp_path):
    out = tmp_path / "run"
    run_bench(CONFIG, out, env=InstantEnv())
    changed = BenchConfig(**{**CONFIG.__dict__, "samples": 3})
    with pytest.raises(ConfigError, match="samples: 2 -> 3"):
        run_bench(changed, out, env=InstantEnv())


def test_problem_selection():
    assert parse_ids("1-3, 7") == {1, 2, 3, 7}
    assert [p.name for p in select_problems(BenchConfig(ids="2,4"))] == ["02_silu", "04_softmax"]
    assert select_problems(BenchConfig(ids="1", small=True))[0].sizes["n"] == 1000
    for spec in ("x", "3-1", "1-"):
        with pytest.raises(ConfigError, match="--ids"):
            parse_ids(spec)
    with pytest.raises(ConfigError, match="level"):
        select_problems(BenchConfig(levels=(1,)))


KERNELBENCH_LIKE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 4096
dim = 8192

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""


def test_problems_of_any_set_are_prepared(tmp_path):
    (tmp_path / "19_ReLU.py").write_text(KERNELBENCH_LIKE)
    (tmp_path / "20_Needs.py").write_text("import not_a_real_package_xyz\n" + KERNELBENCH_LIKE)
    config = BenchConfig(problems=str(tmp_path), ids="19", small=True, sizes={"dim": 64})
    (problem,) = select_problems(config)
    assert problem.sizes["dim"] == 64 and problem.sizes["batch_size"] < 4096
    assert set(problem.shrunk) == {"batch_size"}
    (full,) = select_problems(BenchConfig(problems=str(tmp_path), ids="19"))
    assert full.sizes == {"batch_size": 4096, "dim": 8192} and not full.shrunk
    with pytest.raises(ProblemError, match="20_Needs needs not_a_real_package_xyz"):
        select_problems(BenchConfig(problems=str(tmp_path), ids="20"))


def test_size_notice_only_when_sizes_changed(tmp_path, caplog):
    one = {**CONFIG.__dict__, "ids": "1", "samples": 1, "turns": 1}
    run_bench(BenchConfig(**one), tmp_path / "a", env=InstantEnv())
    assert "small sizes (--full to keep them): 01_vector_add: n 16777216" in caplog.text
    caplog.clear()
    run_bench(BenchConfig(**{**one, "small": False}), tmp_path / "b", env=InstantEnv())
    assert "small sizes" not in caplog.text


def test_scripted_policy_warns_about_problems_without_a_solution(tmp_path, caplog):
    (tmp_path / "19_ReLU.py").write_text(KERNELBENCH_LIKE)
    config = BenchConfig(
        policy="scripted", model="scripted-fix", problems=str(tmp_path), small=True, eval=EvalConfig(device="cpu")
    )
    outcome = run_bench(config, tmp_path / "run", env=InstantEnv())
    assert "scripted policy knows no solution for 1 problem(s)" in caplog.text and "19_ReLU" in caplog.text
    assert outcome.records[0].verdict != "ok"
    caplog.clear()
    run_bench(
        BenchConfig(**{**CONFIG.__dict__, "ids": "1", "samples": 1, "turns": 1}), tmp_path / "b", env=InstantEnv()
    )
    assert "knows no solution" not in caplog.text


def test_size_options_are_parsed():
    assert parse_size_overrides(["batch_size=4", "input_shape[0]=64"]) == {"batch_size": 4, "input_shape[0]": 64}
    for item, message in (("4", "NAME=INTEGER"), ("x=y", "not an integer"), ("a b=1", "NAME=INTEGER")):
        with pytest.raises(ConfigError, match=message):
            parse_size_overrides([item])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "scripted", "--ids", "1-x"], "--ids"),
        (["--policy", "scripted", "--ids", "99"], "no problem of bundled"),
        (["--policy", "scripted", "--problems", "no/such/dir"], "no such file or directory"),
        (["--policy", "openai", "--base-url", "http://127.0.0.1:1/v1"], "needs --model"),
        (["--policy", "openai", "--model", "m"], "needs --base-url"),
        (["--policy", "nope", "--model", "m"], "--policy must be"),
        (["--policy", "scripted", "--history", "best:0"], "history must be"),
        (["--policy", "scripted", "--template", "missing-template"], "no template"),
        (["--policy", "scripted", "--jobs", "0"], "--jobs"),
        (["--policy", "scripted", "--concurrency", "0"], "--concurrency"),
        (["--policy", "scripted", "--max-tokens", "0"], "--max-tokens"),
        (["--policy", "scripted", "--samples", "0"], "--samples must be at least 1, not 0"),
        (["--policy", "scripted", "--turns", "-1"], "--turns must be at least 1, not -1"),
        (["--policy", "scripted", "--iterations", "0"], "--iterations must be at least 1, not 0"),
        (["--policy", "scripted", "--script", "nope"], "--script must be one of fix, replay"),
    ],
)
def test_usage_errors_exit_2(tmp_path, extra, message):
    result = runner.invoke(app, ["bench", "--out", str(tmp_path / "run"), "--device", "cpu", *extra])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output


def test_a_failed_start_leaves_the_run_directory_free(tmp_path):
    """A typo (checked before anything is written) or an unreachable server (found once the run
    directory is set up) does not tie the directory to those settings: the corrected command runs."""
    out = tmp_path / "run"
    typo = runner.invoke(app, ["bench", "--out", str(out), "--device", "cpu", "--policy", "scriptd"])
    assert typo.exit_code == 2 and "--policy must be" in typo.output and not out.exists()
    url = f"http://127.0.0.1:{closed_port()}/v1"
    down = runner.invoke(app, ["bench", "--out", str(out), "--device", "cpu", "--policy", "openai", "--model", "m",
                               "--base-url", url])  # fmt: skip
    assert down.exit_code == 2 and "cannot reach the model server" in down.output
    assert json.loads((out / "run.json").read_text())["base_url"] == url
    outcome = run_bench(CONFIG, out, env=InstantEnv())  # other settings, nothing recorded before: it runs
    assert json.loads((out / "run.json").read_text())["policy"] == "scripted"
    assert outcome.new_records == len(outcome.records) > 0


def test_an_unwritable_run_directory_is_a_usage_error(tmp_path):
    (tmp_path / "file").write_text("")
    for out, message in [(tmp_path / "file", "is a file; give a directory"),
                         (tmp_path / "file" / "run", "cannot create the directory")]:  # fmt: skip
        result = runner.invoke(app, ["bench", "--out", str(out), "--device", "cpu", "--policy", "scripted"])
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output


def test_unreachable_server_exits_2(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    args = ["bench", "--out", str(tmp_path / "run"), "--device", "cpu", "--policy", "openai", "--model", "m",
            "--base-url", url]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "cannot reach the model server" in result.output


def test_report_step(tmp_path, monkeypatch, caplog):
    import sys
    import types

    from tritongym.bench.run import write_report

    monkeypatch.setitem(sys.modules, "tritongym.bench.report", None)  # the package is absent
    assert write_report(tmp_path) is False and "report step is unavailable" in caplog.text
    called = []
    module = types.SimpleNamespace(write_report=called.append)
    monkeypatch.setitem(sys.modules, "tritongym.bench.report", module)
    assert write_report(tmp_path) is True and called == [tmp_path]

    def broken(run_dir):
        raise ValueError("bad plot")

    module.write_report = broken
    assert write_report(tmp_path) is False and "bad plot" in caplog.text


class InstantPool(InstantEnv):
    slots = 2

    def fingerprint(self):
        return {"device": "instant"}


@pytest.fixture
def service(tmp_path):
    """A tritongym service on loopback over a pool that judges instantly (bearer token 'tok')."""
    import threading
    import time

    import uvicorn

    from tritongym.env.service import ServiceConfig, create_app
    from tritongym.env.store import TaskStore

    store = TaskStore(tmp_path / "tasks.sqlite")
    port = closed_port()
    config = uvicorn.Config(create_app(InstantPool(), store, ServiceConfig(token="tok")), port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join()
    store.close()


def test_evaluation_on_a_service(service, tmp_path, monkeypatch):
    args = ["bench", "--policy", "scripted", "--ids", "1-2", "--turns", "2", "--out", str(tmp_path / "run"),
            "--env-url", service]  # fmt: skip
    monkeypatch.setenv("TRITONGYM_TOKEN", "wrong")
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "refused the token" in refused.output
    monkeypatch.setenv("TRITONGYM_TOKEN", "tok")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    records = sorted(read_records(tmp_path / "run" / TRAJECTORIES), key=lambda r: (r.problem, r.turn))
    assert [r.verdict for r in records] == ["compile_error", "ok"] * 2
    assert json.loads((tmp_path / "run" / "run.json").read_text())["small"] is False


def test_unreachable_service_exits_2(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    result = runner.invoke(app, ["bench", "--policy", "scripted", "--out", str(tmp_path / "run"), "--env-url", url])
    assert result.exit_code == 2 and "cannot reach the evaluation service" in result.output


def test_progress_without_a_terminal_logs_lines(caplog):
    import logging

    from tritongym.agent.records import TurnRecord
    from tritongym.bench.cli import _Progress

    caplog.set_level(logging.INFO, logger="tritongym")
    progress = _Progress()
    progress.start(total=3, done=1)
    ok = TurnRecord("r", "p", 0, 0, [], "", "ok", result={"correct": True, "speedup": 1.5, "findings": []})
    progress.record(ok)
    progress.record(TurnRecord("r", "p", 0, 1, [], "", "mismatch", result={"correct": False}))
    progress.stop()
    assert "resuming: 1 of 3 turns already recorded" in caplog.text
    assert "2/3 turns, 1 correct, 1 fast" in caplog.text and "3/3 turns, 1 correct, 1 fast" in caplog.text


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from tritongym.train.tiny import build_tiny_model, build_tiny_tokenizer

    path = tmp_path_factory.mktemp("tiny-model")
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(tokenizer).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_cli_hf_policy_from_a_model_directory(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    args = ["bench", "--policy", "hf", "--model", str(tiny_model_dir), "--ids", "1", "--max-tokens", "4",
            "--out", str(out), "--device", "cpu", "--jobs", "1", "--trials", "1"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (record,) = read_records(out / TRAJECTORIES)
    assert record.model == str(tiny_model_dir) and record.problem == "01_vector_add"
    assert 0 < len(record.token_ids) <= 4 and len(record.logprobs) == len(record.token_ids)
    assert record.prompt_token_ids and record.verdict == "no_code"  # four random tokens hold no program
    assert json.loads((out / "run.json").read_text())["policy"] == "hf"


def test_cli_hf_policy_errors(tmp_path):
    result = runner.invoke(app, ["bench", "--policy", "hf", "--out", str(tmp_path / "a"), "--device", "cpu"])
    assert result.exit_code == 2 and "--policy hf needs --model" in result.output
    missing = str(tmp_path / "no-such-model")
    result = runner.invoke(app, ["bench", "--policy", "hf", "--model", missing, "--out", str(tmp_path / "b"),
                                 "--device", "cpu"])  # fmt: skip
    assert result.exit_code == 2 and f"--model {missing}: no such model directory" in " ".join(result.output.split())


def test_cli_eval_options_come_from_evalconfig(tmp_path):
    result = runner.invoke(app, ["bench", "--policy", "scripted", "--out", str(tmp_path / "a"), "--tolerance", "huge"])
    assert result.exit_code == 2 and "tolerance" in result.output and not (tmp_path / "a").exists()


def test_ctrl_c_says_what_is_recorded_and_how_to_resume(tmp_path, monkeypatch):
    from tritongym.bench import cli as bench_cli

    def interrupted(config, out, *, on_start, **_):
        on_start(4, 1)  # one turn recorded before, by an earlier session
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_cli, "run_bench", interrupted)
    result = runner.invoke(app, ["bench", "--policy", "scripted", "--out", str(tmp_path / "run"), "--device", "cpu"])
    assert result.exit_code == 130 and "Traceback" not in result.output
    said = " ".join(result.output.split())
    assert "interrupted: 1 of 4 turns recorded in" in said and "the same command resumes the run" in said
