"""write_report and compare_runs on synthetic run directories."""

import json

import pytest
from helpers_bench import record

from tritongym.agent.records import write_records
from tritongym.bench.report import compare_runs, write_report
from tritongym.errors import ConfigError

PNG = b"\x89PNG\r\n\x1a\n"


def make_run(path, records, config=None):
    path.mkdir(parents=True, exist_ok=True)
    write_records(path / "trajectories.jsonl", records)
    if config is not None:
        (path / "run.json").write_text(json.dumps(config))
    return path


GPU_RECORDS = [
    record("p", 0, 0, "compile_error"),
    record("p", 0, 1, "ok", speedup=1.5, coverage=0.9),
    record("p", 1, 0, "ok", speedup=0.8, coverage=0.5),
    record("p", 1, 1, "ok", speedup=2.0, coverage=1.0),
    record("q", 0, 0, "hack_side_stream"),
    record("q", 0, 1, "infrastructure_error"),
    record("q", 1, 0, "no_code"),
    record("q", 1, 1, "mismatch"),
]
CONFIG = {"model": "scripted-model", "problems": ["p", "q"], "samples": 2, "turns": 2, "unknown_key": {"a": 1}}


def test_write_report_writes_summary_markdown_and_plots(tmp_path):
    run = make_run(tmp_path / "gpu", GPU_RECORDS, CONFIG)
    write_report(run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run"] == CONFIG
    assert summary["records"] == 8 and summary["episodes"] == 4 and summary["turns"] == 2
    first, best = summary["first_turn"], summary["best"]
    # first turn: compile_error, ok 0.8, hack, no_code
    assert first["correct_rate"] == 0.25
    assert first["compile_rate"] == 0.5  # ok and the hack ran
    assert first["hack_rate"] == 0.25 and first["no_code_rate"] == 0.25
    assert first["fast_p"]["kernelbench"]["1"] == 0.0
    # best: p/0 ok 1.5, p/1 ok 2.0, q/0 hack (turn 1 was infra), q/1 mismatch
    assert best["correct_rate"] == 0.5
    assert best["fast_p"]["kernelbench"]["2"] == 0.0
    assert best["fast_p"]["drkernel"]["2"] == 0.25
    assert best["geomean_speedup"] == pytest.approx(3.0**0.5)
    assert best["pass_at_k"] == {"1": 0.5, "2": 0.5}
    assert best["coverage"]["count"] == 2
    assert summary["per_turn"][1]["infrastructure_excluded"] == 1
    report = (run / "report.md").read_text()
    assert "# Benchmark report: scripted-model" in report
    assert "| correct rate (fast_0) | 25.0% | 50.0% |" in report
    assert "| fast_2 (Dr.Kernel, >=) | 0.0% | 25.0% |" in report
    assert "| hack_side_stream | hack | 1 | 12.5% |" in report
    assert '| unknown_key | {"a": 1} |' in report
    for name in ("fast_p.png", "turns.png", "verdicts.png"):
        assert (run / name).read_bytes().startswith(PNG)
        assert f"]({name})" in report


def test_cpu_run_reports_fast_p_as_not_measured(tmp_path):
    records = [record("p", s, 0, "ok" if s % 2 else "mismatch") for s in range(4)]
    run = make_run(tmp_path / "cpu", records, {"model": "m"})
    write_report(run)
    summary = json.loads((run / "summary.json").read_text())
    block = summary["first_turn"]
    assert summary["best"] == block
    assert block["fast_p"]["kernelbench"]["0"] == block["correct_rate"] == 0.5
    assert block["fast_p"]["kernelbench"]["1"] is None
    assert block["fast_p"]["drkernel"]["3"] is None
    assert block["geomean_speedup"] is None and block["coverage"] is None
    report = (run / "report.md").read_text()
    assert "| fast_1 (KernelBench, >) | n/a |" in report
    assert "| metric | single turn |" in report
    assert "## Per turn" not in report
    assert (run / "fast_p.png").read_bytes().startswith(PNG)


def test_write_report_without_run_json_still_reports(tmp_path):
    run = make_run(tmp_path / "bare", [record("p", 0, 0, "ok")])
    write_report(run)
    assert json.loads((run / "summary.json").read_text())["run"] == {}
    assert "# Benchmark report: bare" in (run / "report.md").read_text()


def test_missing_empty_or_broken_run_directories_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such run directory"):
        write_report(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"not a run directory \(no trajectories.jsonl\)"):
        write_report(tmp_path / "empty")
    (tmp_path / "empty" / "trajectories.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no trajectory records"):
        write_report(tmp_path / "empty")
    run = make_run(tmp_path / "badjson", [record("p", 0, 0, "ok")])
    (run / "run.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"run\.json: not JSON"):
        write_report(run)
    (run / "run.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        write_report(run)
    run = make_run(tmp_path / "badrecord", [])
    (run / "trajectories.jsonl").write_text('{"run_id": "r"}\n{"run_id": "r"}\n')
    with pytest.raises(ConfigError, match="malformed trajectory records"):
        write_report(run)
    odd = record("p", 0, 0, "ok")
    odd.verdict = "great_success"
    run = make_run(tmp_path / "oddverdict", [odd])
    with pytest.raises(ConfigError, match=r"cannot summarize.*great_success"):
        write_report(run)


def test_compare_runs_puts_runs_side_by_side(tmp_path):
    gpu = make_run(tmp_path / "model-a", GPU_RECORDS, CONFIG)
    cpu = make_run(tmp_path / "model-b", [record("p", 0, 0, "ok"), record("q", 0, 0, "mismatch")], {"model": "b"})
    out = tmp_path / "cmp"
    table = compare_runs([gpu, cpu], out)
    assert "| metric | model-a | model-b |" in table
    assert "| correct rate (fast_0) | 50.0% | 50.0% |" in table
    assert "| fast_1 (KernelBench, >) | 50.0% | n/a |" in table
    markdown = (out / "compare.md").read_text()
    assert table in markdown
    assert "| model-a | scripted-model | 2 | 1 |" in markdown
    for name in ("compare_fast_p.png", "compare_turns.png", "compare_verdicts.png"):
        assert (out / name).read_bytes().startswith(PNG)
    with pytest.raises(ConfigError, match="two or more"):
        compare_runs([gpu], out)
    with pytest.raises(ConfigError, match="no such run directory"):
        compare_runs([gpu, tmp_path / "missing"], out)


def test_compare_labels_runs_by_path_when_names_clash(tmp_path):
    a = make_run(tmp_path / "x" / "run", [record("p", 0, 0, "ok")])
    b = make_run(tmp_path / "y" / "run", [record("p", 0, 0, "mismatch")])
    table = compare_runs([a, b], tmp_path / "out")
    assert f"| metric | {a} | {b} |" in table


def test_test_time_scaling_run_reports_best_over_iterations(tmp_path):
    records = [
        record("p", 0, 0, "mismatch", iteration=0),
        record("p", 0, 1, "mismatch", iteration=0),
        record("p", 0, 2, "ok", speedup=1.25, iteration=1),
        record("p", 0, 3, "ok", speedup=0.9, iteration=1),
    ]
    run = make_run(tmp_path / "stts", records, {"model": "m", "turns": 2, "iterations": 2, "history": "best:1"})
    write_report(run)
    summary = json.loads((run / "summary.json").read_text())
    assert [b["correct_rate"] for b in summary["best_by_iteration"]] == [0.0, 1.0]
    assert summary["best"]["geomean_speedup"] == pytest.approx(1.25)
    report = (run / "report.md").read_text()
    assert "in 2 iterations" in report
    assert "## Best over iterations" in report
    assert "| 1 | 100.0% | 100.0% | 1.25 |" in report
