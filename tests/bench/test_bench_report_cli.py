"""``tritongym report``: re-render one run, compare several, clear errors."""

import json

from helpers_bench import record
from test_bench_report import CONFIG, GPU_RECORDS, make_run
from typer.testing import CliRunner

from tritongym.cli import EXIT_USAGE, app

runner = CliRunner()


def test_report_re_renders_one_run(tmp_path):
    run = make_run(tmp_path / "run", GPU_RECORDS, CONFIG)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert "correct rate (fast_0)" in result.stdout and "50.0%" in result.stdout
    assert json.loads((run / "summary.json").read_text())["best"]["correct_rate"] == 0.5
    assert (run / "report.md").is_file() and (run / "turns.png").is_file()


def test_report_compares_runs_into_the_first_dir_or_out(tmp_path):
    a = make_run(tmp_path / "a", GPU_RECORDS, CONFIG)
    b = make_run(tmp_path / "b", [record("p", 0, 0, "ok"), record("q", 0, 0, "timeout")])
    result = runner.invoke(app, ["report", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "fast_1 (KernelBench, >)" in result.stdout and "n/a" in result.stdout
    assert (a / "compare.md").is_file() and (a / "compare_fast_p.png").is_file()
    assert not (b / "compare.md").exists()
    out = tmp_path / "cmp"
    assert runner.invoke(app, ["report", str(a), str(b), "--out", str(out)]).exit_code == 0
    assert (out / "compare.md").is_file() and (out / "compare_verdicts.png").is_file()


def test_report_errors_exit_2_with_a_message(tmp_path):
    (tmp_path / "empty").mkdir()
    run = make_run(tmp_path / "run", GPU_RECORDS)
    cases = {
        (str(tmp_path / "missing"),): "no such run directory",
        (str(tmp_path / "empty"),): "not a run directory",
        (str(run), str(tmp_path / "empty")): "not a run directory",
        (str(run), "--out", str(tmp_path / "x")): "--out is for comparisons",
    }
    for args, message in cases.items():
        result = runner.invoke(app, ["report", *args])
        assert result.exit_code == EXIT_USAGE, args
        assert message in result.stderr, (args, result.stderr)
