"""The command line: listing, single and batch evaluation, exit codes, JSON output, refusals before work."""

import contextlib
import io
import json
import logging
import re
import shutil
import socket
import sys
from concurrent.futures import Future
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from helpers import CANDIDATES, DEVICE, PROCESSES_REFUSED
from tritongym import cli
from tritongym.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, app
from tritongym.config_options import config_options, flag
from tritongym.evaluate import EvalConfig, EvalResult, Finding, Verdict
from tritongym.progress import ProgressReport

runner = CliRunner()


def test_version():
    import torch

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == EXIT_OK and result.stdout.startswith("tritongym 0.")
    assert f"torch {torch.__version__}" in result.stdout


def test_problems_list_shows_the_bundled_set():
    result = runner.invoke(app, ["problems", "list"])
    assert result.exit_code == 0
    assert "13 problems from bundled" in result.output and "04_softmax" in result.output


def test_problems_list_says_which_files_are_not_problems_and_fails(tmp_path):
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "no_inputs.py").write_text("import torch\n\nclass Model(torch.nn.Module):\n    pass\n")
    (tmp_path / "fine.py").write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    pass\n\n"
        "def get_inputs():\n    return []\n\ndef get_init_inputs():\n    return []\n"
    )
    result = runner.invoke(app, ["problems", "list", str(tmp_path)])
    assert result.exit_code == 1
    assert "2 of 3 cannot be evaluated" in result.stderr
    flat = " ".join(result.stdout.split())
    assert "defines no Model, get_inputs, get_init_inputs" in flat and "defines no get_inputs, get_init_inputs" in flat


def test_eval_single_candidate_says_when_its_out_file_is_overwritten(tmp_path):
    out = tmp_path / "one.jsonl"
    args = ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "syntax_error.py"), "--trials", "1",
            "--device", DEVICE, "--out", str(out)]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code != 0 and "overwritten" not in first.stderr and out.read_text().count("\n") == 1
    second = runner.invoke(app, args)
    assert f"{out} is overwritten" in second.stderr and out.read_text().count("\n") == 1  # the path unbroken


def test_eval_single_candidate_json_and_exit_codes(tmp_path):
    ok = runner.invoke(
        app, ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--trials", "2",
              "--device", DEVICE, "--json", "--out", str(tmp_path / "one.jsonl")],
    )  # fmt: skip
    assert ok.exit_code == EXIT_OK, ok.output
    payload = json.loads(ok.stdout.strip().splitlines()[-1])
    assert payload["verdict"] == "ok" and payload["problem"] == "01_vector_add"
    (row,) = map(json.loads, (tmp_path / "one.jsonl").read_text().splitlines())
    assert row == {"candidate": str(CANDIDATES / "correct.py"), **payload}
    bad = runner.invoke(
        app, ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "mismatch.py"), "--trials", "2",
              "--device", DEVICE],
    )  # fmt: skip
    assert bad.exit_code == EXIT_FAILED
    assert "mismatch" in bad.stdout and "max abs error" in bad.stdout


def test_eval_usage_errors_exit_2_with_a_message(tmp_path):
    cases = [
        ["eval", "--problem", "nonsense", "--candidate", str(CANDIDATES / "correct.py")],
        ["eval", "--candidate", str(CANDIDATES / "correct.py")],
        ["eval", "--problem", "vector_add", "--candidate", str(tmp_path / "missing.py")],
        ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--trials", "0"],
        ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--size", "n=x"],
        ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--size", "m=3"],
        ["eval", "--candidate", str(tmp_path)],
        ["eval", "--problem", "vector_add", "--candidate", str(tmp_path)],
        ["eval", "--candidate", str(tmp_path / "missing.jsonl")],
        ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--error-factor", "-1"],
        ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--jobs", "0"],
        ["eval", "--candidate", str(tmp_path), "--jobs", "-1"],
        ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--out", str(tmp_path)],
        ["eval", "--candidate", str(tmp_path), "--out", str(tmp_path / "missing" / "r.jsonl")],
        ["demo", "--out", str(tmp_path / "missing" / "r.jsonl")],
    ]
    for args in cases:
        result = runner.invoke(app, [*args, "--device", DEVICE])
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert "error:" in result.output or "Invalid value" in result.output, (args, result.output)
        assert "Traceback" not in result.output and "evaluating" not in result.output


def test_refusals_name_the_flag_and_the_unwritable_output(tmp_path):
    """A config value is refused in the command line's words (--timeout, not timeout_s); an --out that
    cannot be opened is refused before the evaluation, so a finished result is never lost to it."""
    correct = str(CANDIDATES / "correct.py")
    (tmp_path / "file").write_text("")
    cases = [
        (["--timeout", "0"], "--timeout must be positive, not 0.0"),
        (["--memory-limit-mb", "-5"], "--memory-limit-mb must be positive, not -5"),
        (["--timing-budget", "-1"], "--timing-budget must be positive"),
        (["--out", str(tmp_path / "file" / "r.jsonl")], "does not exist; create it first"),
    ]
    if Path("/proc/self").is_dir():  # a place no user (root included) can create a file in
        cases.append((["--out", "/proc/tritongym-results.jsonl"], "--out /proc/tritongym-results.jsonl: not writable"))
    for extra, message in cases:
        result = runner.invoke(app, ["eval", "--problem", "vector_add", "--candidate", correct, "--device", DEVICE,
                                     *extra])  # fmt: skip
        assert result.exit_code == EXIT_USAGE and message in _flat(result.output), (extra, result.output)
        assert "Traceback" not in result.output and "evaluating" not in result.output
    kept = tmp_path / "kept.jsonl"
    kept.write_text("earlier results\n")
    cli._check_output(kept)  # the check opens to append: an existing file's content stays
    assert kept.read_text() == "earlier results\n"
    cli._check_output(tmp_path / "new.jsonl")
    assert not (tmp_path / "new.jsonl").exists()  # nor does the check leave a file behind


def test_output_directories_are_checked_before_work(tmp_path):
    (tmp_path / "file").write_text("")
    for args in [
        ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "file")],
        ["solutions", "inductor", "bundled", "--ids", "1", "--device", "cpu", "--out", str(tmp_path / "file")],
    ]:
        result = runner.invoke(app, args)
        assert result.exit_code == EXIT_USAGE and "is a file; give a directory" in _flat(result.output), result.output
        assert "Traceback" not in result.output and "compiling" not in result.output


def test_messages_print_user_text_and_install_hints_verbatim(monkeypatch):
    bracketed = runner.invoke(app, ["eval", "--problem", "[red]x", "--candidate", str(CANDIDATES / "correct.py")])
    assert bracketed.exit_code == EXIT_USAGE and "no problem '[red]x'" in bracketed.output
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the ray extra were not installed
    no_ray = runner.invoke(app, ["serve", "--backend", "ray", "--port", str(_free_port())])
    assert no_ray.exit_code == EXIT_USAGE and "pip install 'tritongym[ray]'" in no_ray.output


def _flat(output: str) -> str:
    """Click's usage errors come in a box: the words without the frame and line breaks."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_refuses_bad_ports_databases_and_jobs_before_starting(tmp_path):
    db = ["--db", str(tmp_path / "x.db")]
    for args, phrase in [
        (["--port", "99999", *db], "--port': Input should be less than or equal to 65535"),
        (["--jobs", "0", *db], "--jobs': Input should be greater than or equal to 1"),
        (["--db", str(tmp_path / "missing" / "x.db")], "does not exist; create it first"),
        (["--backend", "slurm", *db], "--backend must be"),
    ]:
        result = runner.invoke(app, ["serve", *args])
        assert result.exit_code == EXIT_USAGE and phrase in _flat(result.output), (args, result.output)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        busy = runner.invoke(app, ["serve", "--port", port, *db])
    assert busy.exit_code == EXIT_USAGE and f"cannot listen on 127.0.0.1:{port}" in busy.output
    assert "serving" not in busy.output and not (tmp_path / "x.db").exists()


def test_every_eval_config_field_is_an_eval_option():
    command = typer.main.get_command(app).commands["eval"]
    options = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]}
    assert {flag(f.name) for f in fields(EvalConfig)} <= options
    assert {"--timeout", "--timing-budget", "--memory-limit-mb", "--atol", "--no-profile"} <= options


def test_config_options_refuse_what_they_cannot_map():
    @dataclass
    class Odd:
        shape: tuple = (1, 2)

    with pytest.raises(TypeError, match="no command-line type"):
        config_options(Odd, on_error=ValueError)

    def clashes(trials: int = 1, *, config: EvalConfig) -> None: ...

    with pytest.raises(TypeError, match=r"named like EvalConfig fields: \['trials'\]"):
        config_options(EvalConfig, on_error=ValueError)(clashes)


def test_results_table_keeps_problem_names_whole_and_shows_findings():
    name = "83_Conv3d_GroupNorm_Min_Clamp_Dropout"
    rows = [
        ("s/a.py", EvalResult(name, Verdict.OK, "", trials=2, findings=[Finding("torch_compute", "conv3d x1")])),
        ("s/b.py", EvalResult(name, Verdict.MISMATCH, "", trials=2)),
        ("s/c.py", EvalResult("[red]01_vector_add", Verdict.OK, "", trials=2, trials_passed=2)),
    ]
    console = Console(width=80, file=io.StringIO())
    console.print(cli._results_table(rows, "[bold]title[/bold]"))
    text = console.file.getvalue()
    assert name in text and "[red]01_vector_add" in text and "[bold]title[/bold]" in text
    assert "torch" in text and "mismatch" in text and "a.py" in text and "2/2" in text
    assert "speedup" not in text and "coverage" not in text  # nothing to say on the CPU


def test_tables_off_a_terminal_are_printed_at_their_natural_width(monkeypatch):
    name = "13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling"
    finding = Finding("torch_compute", "conv_transpose3d x1")
    rows = [("s/a.py", EvalResult(name, Verdict.OK, "", trials=2, trials_passed=2, findings=[finding]))]
    monkeypatch.setattr(cli, "out", Console(width=80, file=io.StringIO()))  # a pipe: not a terminal
    cli._print_table(cli._results_table(rows, "title"))
    line = next(line for line in cli.out.file.getvalue().splitlines() if name in line)
    assert "torch_compute" in line and "2/2" in line  # one line: nothing folded into the next
    monkeypatch.setattr(cli, "out", Console(width=80, file=io.StringIO(), force_terminal=True))
    cli._print_table(cli._results_table(rows, "title"))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", cli.out.file.getvalue())
    assert max(len(line) for line in plain.splitlines()) <= 80  # a terminal's width holds


def test_a_directory_without_candidates_is_a_usage_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a candidate")
    matched = runner.invoke(app, ["eval", "--candidate", str(tmp_path)])
    assert matched.exit_code == EXIT_USAGE
    assert "no <problem name>.py file matching a problem of bundled" in " ".join(matched.stderr.split())
    one = runner.invoke(app, ["eval", "--candidate", str(tmp_path), "--problem", "softmax"])
    assert one.exit_code == EXIT_USAGE and f"{tmp_path.name}: no .py file" in " ".join(one.stderr.split())


@pytest.fixture
def warm_cli(monkeypatch, warm_env, judge):
    """The commands evaluate in the session's warm sandbox, with the config their flags made: `eval` of
    one file through ``evaluate``, a batch through the local pool. (test_eval_single_candidate_json_and_exit_codes
    and test_one_problem_for_a_directory_of_samples start sandboxes of their own, as a user's command does.)"""
    monkeypatch.setattr(cli, "evaluate", judge)
    monkeypatch.setattr(cli, "_pool", lambda config, jobs: contextlib.nullcontext(warm_env))


def test_batch_over_a_directory_writes_jsonl(warm_cli, tmp_path, caplog):
    directory = tmp_path / "cands"
    directory.mkdir()
    token = CANDIDATES.parent / "adversarial/candidates/token_triton.py"  # correct, with a PyTorch-compute finding
    shutil.copy(token, directory / "vector_add.py")  # a short name, as single mode accepts
    shutil.copy(CANDIDATES / "min_max_single_output.py", directory / "08_row_min_max.py")
    (directory / "not_a_problem.py").write_text("x = 1\n")
    out = tmp_path / "results.jsonl"
    with caplog.at_level(logging.INFO, logger="tritongym"):
        result = runner.invoke(
            app, ["eval", "--candidate", str(directory), "--out", str(out), "--trials", "2", "--device", DEVICE]
        )
    assert result.exit_code == EXIT_FAILED, result.output
    assert "1/2 correct" in result.output and "skipped" in result.output and "findings" in result.output
    rows = {r["problem"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["01_vector_add"]["verdict"] == "ok" and rows["01_vector_add"]["findings"][0]["check"] == "torch_compute"
    assert rows["08_row_min_max"]["verdict"] == "wrong_shape"
    assert rows["08_row_min_max"]["candidate"].endswith("08_row_min_max.py")
    assert "evaluating: 2/2" in caplog.text  # no terminal here: progress goes to the log


def test_batch_of_jsonl_rows_prints_json_lines(warm_cli, tmp_path):
    correct, mismatch = (CANDIDATES / "correct.py").read_text(), (CANDIDATES / "mismatch.py").read_text()
    samples = tmp_path / "samples.jsonl"
    rows = [{"problem": "vector_add", "candidate": correct, "id": "a"}, {"problem": "01", "candidate": mismatch}]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(app, ["eval", "--candidate", str(samples), "--json", "--trials", "2", "--device", DEVICE])
    assert result.exit_code == EXIT_FAILED, result.output
    printed = {r["candidate"]: r["verdict"] for r in map(json.loads, result.stdout.strip().splitlines())}
    assert printed == {"a": "ok", "samples.jsonl:2": "mismatch"}
    (samples.parent / "bad.jsonl").write_text('{"problem": "vector_add"}\n')
    bad = runner.invoke(app, ["eval", "--candidate", str(samples.parent / "bad.jsonl")])
    # The console wraps at 80 columns, even inside the path (as long as tmp_path is): compare without spaces.
    assert bad.exit_code == EXIT_USAGE and "bad.jsonl:1:expected" in "".join(_flat(bad.output).split())


def test_one_problem_for_a_directory_of_samples(tmp_path):
    shutil.copy(CANDIDATES / "correct.py", tmp_path / "sample_0.py")
    shutil.copy(CANDIDATES / "mismatch.py", tmp_path / "sample_1.py")
    args = ["eval", "--problem", "vector_add", "--candidate", str(tmp_path), "--trials", "2", "--device", DEVICE]
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_FAILED and "1/2 correct" in result.output, result.output
    assert "sample_1.py" in result.output and "max abs error" in result.output


class _FinishedPool:
    """Stands in for the local pool: every submission is already evaluated."""

    def __init__(self, *_):
        pass

    def submit(self, problem, candidate, config, priority=0):
        future = Future()
        future.set_result(EvalResult(problem.name, Verdict.OK, ""))
        return future

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def test_demo_keeps_full_sizes_when_asked(monkeypatch):
    seen = []

    class Recording(_FinishedPool):
        def submit(self, problem, candidate, config, priority=0):
            seen.append(problem)
            return super().submit(problem, candidate, config, priority)

    monkeypatch.setattr(cli, "_pool", Recording)
    small = runner.invoke(app, ["demo", "--device", "cpu"])
    assert small.exit_code == EXIT_OK and "--full to keep them" in small.stderr
    assert seen[0].sizes == {"n": 1000}
    seen.clear()
    full = runner.invoke(app, ["demo", "--device", "cpu", "--full"])
    assert full.exit_code == EXIT_OK and "small sizes" not in full.stderr
    assert seen[0].sizes == {"n": 16777216} and len(seen) == 13


def test_ctrl_c_says_how_much_was_written(tmp_path, monkeypatch):
    class InterruptedAfterOne(ProgressReport):
        def advance(self, n=1):
            super().advance(n)
            raise KeyboardInterrupt

    submitted = []

    class Recording(_FinishedPool):
        def submit(self, problem, candidate, config, priority=0):
            submitted.append(problem.name)
            return super().submit(problem, candidate, config, priority)

    monkeypatch.setattr(cli, "_pool", Recording)
    out = tmp_path / "partial.jsonl"
    args = ["demo", "--device", "cpu", "--out", str(out)]
    with monkeypatch.context() as patch:
        patch.setattr(cli, "ProgressReport", InterruptedAfterOne)
        result = runner.invoke(app, args)
    assert result.exit_code == EXIT_INTERRUPTED
    said = result.output.replace("\n", "")
    assert f"interrupted: 1 of 13 results written to {out}; the same command with --resume evaluates the rest" in said
    (kept,) = out.read_text().splitlines()
    submitted.clear()
    resumed = runner.invoke(app, [*args, "--resume"])  # the demo goes on: only the 12 solutions not in --out
    assert resumed.exit_code == EXIT_OK and "13/13 correct" in resumed.output, resumed.output
    assert len(submitted) == 12 and json.loads(kept)["problem"] not in submitted
    assert "resuming: 1 of 13 results already in" in _flat(resumed.output)
    assert sorted(json.loads(line)["problem"] for line in out.read_text().splitlines()) == sorted(
        [json.loads(kept)["problem"], *submitted]
    )
    no_out = runner.invoke(app, ["demo", "--device", "cpu", "--resume"])
    assert no_out.exit_code == EXIT_USAGE and "--resume needs --out" in no_out.output


def test_progress_is_logged_without_a_terminal(caplog):
    with caplog.at_level(logging.INFO, logger="tritongym"):
        with ProgressReport(3, "evaluating", Console(file=io.StringIO()), interval_s=0) as progress:
            progress.advance()
            progress.advance(2)
        with ProgressReport(3, "quiet", Console(file=io.StringIO(), force_terminal=True)) as bar:
            bar.advance(3)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "evaluating: 0/3" and lines[1].startswith("evaluating: 1/3, ") and "ETA" in lines[1]
    assert lines[2].startswith("evaluating: 3/3, ") and "ETA" not in lines[2]
    assert not any("quiet" in line for line in lines)  # a terminal gets the live bar instead


def test_problems_list_of_a_table_with_custom_columns(tmp_path):
    table = tmp_path / "book.jsonl"
    reference = (CANDIDATES.parent.parent / "tritongym/problems/data/02_silu.py").read_text()
    table.write_text(json.dumps({"uuid": "silu-1", "code": reference}) + "\n")
    wrong = runner.invoke(app, ["problems", "list", str(table)])
    assert wrong.exit_code == EXIT_USAGE and "--source-column" in wrong.output
    right = runner.invoke(app, ["problems", "list", str(table), "--source-column", "code"])
    assert right.exit_code == 0 and "silu-1" in right.output and "batch_size=4096" in right.output


def test_guard_policies_from_the_command_line(warm_cli):
    token = CANDIDATES.parent / "adversarial/candidates/token_triton.py"
    base = ["eval", "--problem", "vector_add", "--candidate", str(token), "--trials", "2", "--device", DEVICE]
    penalized = runner.invoke(app, base)
    assert penalized.exit_code == EXIT_OK and "finding (torch_compute): " in penalized.output
    forbid = runner.invoke(app, [*base, "--torch-compute", "forbid"])
    assert forbid.exit_code == EXIT_FAILED and "hack_torch_compute" in forbid.output
    bad = runner.invoke(app, [*base, "--torch-compute", "sometimes"])
    assert bad.exit_code == EXIT_USAGE and "--torch-compute must be" in bad.output  # the flag, not the field
    forks = ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "forks.py"), "--trials", "2",
             "--device", DEVICE]  # fmt: skip
    assert "hack_forbidden_api" in runner.invoke(app, forks).output
    forked = "runtime_error" if PROCESSES_REFUSED else "hack_threads"  # a runner may not fork at all (red team 4 #7)
    assert forked in runner.invoke(app, [*forks, "--no-static-checks"]).output


def test_timing_options_from_the_command_line(warm_cli):
    base = ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--trials", "2",
            "--device", DEVICE, "--json", "--timing-budget", "2"]  # fmt: skip
    bad = runner.invoke(app, [*base, "--baseline", "jit"])
    assert bad.exit_code == EXIT_USAGE and "--baseline must be" in bad.output
    off = runner.invoke(app, [*base, "--no-timing", "--no-profile"])
    payload = json.loads(off.stdout.strip().splitlines()[-1])
    assert off.exit_code == EXIT_OK and payload["speedup"] is None and payload["coverage"] is None
    on = json.loads(runner.invoke(app, base).stdout.strip().splitlines()[-1])
    assert (on["speedup"] is None) is (DEVICE == "cpu")
    assert (on["coverage"] is None) is (DEVICE == "cpu")


def test_an_interrupted_batch_resumes_without_losing_results(tmp_path, monkeypatch):
    """Ctrl-C keeps what was written and says how to go on; --resume evaluates only the candidates the
    file has no result for (a line cut short and an infrastructure error are done again)."""
    samples = tmp_path / "samples.jsonl"
    source = (CANDIDATES / "correct.py").read_text()
    samples.write_text(
        "".join(json.dumps({"problem": "vector_add", "candidate": source, "id": i}) + "\n" for i in "abc")
    )
    out = tmp_path / "results.jsonl"
    submitted = []

    class Recording(_FinishedPool):
        def submit(self, problem, candidate, config, priority=0):
            submitted.append(problem.name)
            return super().submit(problem, candidate, config, priority)

    class InterruptedAfterOne(ProgressReport):
        def advance(self, n=1):
            super().advance(n)
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_pool", Recording)
    args = ["eval", "--candidate", str(samples), "--out", str(out), "--device", "cpu"]
    with monkeypatch.context() as patch:
        patch.setattr(cli, "ProgressReport", InterruptedAfterOne)
        stopped = runner.invoke(app, args)
    assert stopped.exit_code == EXIT_INTERRUPTED
    assert "1 of 3 results" in _flat(stopped.output) and "with --resume evaluates the rest" in _flat(stopped.output)
    (first,) = map(json.loads, out.read_text().splitlines())
    infra = {**first, "candidate": "b", "verdict": "infrastructure_error"}
    out.write_text(out.read_text() + json.dumps(infra) + "\n" + '{"candidate": "c", "verd')  # c's line cut short
    submitted.clear()
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == EXIT_OK and "3/3 correct" in resumed.output, resumed.output
    assert len(submitted) == 2 and "resuming: 1 of 3 results already in" in _flat(resumed.output)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["candidate"] for r in rows) == ["a", "b", "c"] and {r["verdict"] for r in rows} == {"ok"}
    monkeypatch.setattr(cli, "_pool", None)  # nothing left to evaluate: no pool is started
    again = runner.invoke(app, [*args, "--resume", "--json"])
    assert again.exit_code == EXIT_OK and len(again.stdout.strip().splitlines()) == 3
    no_out = runner.invoke(app, [*args[:-4], "--device", "cpu", "--resume"])
    assert no_out.exit_code == EXIT_USAGE and "--resume needs --out" in no_out.output
    single = ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--resume"]
    assert "--resume is for batch mode" in runner.invoke(app, single).output
