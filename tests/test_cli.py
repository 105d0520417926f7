"""The command line: listing, single and batch evaluation, exit codes, JSON output."""

import json
import shutil

from typer.testing import CliRunner

from helpers import CANDIDATES, DEVICE
from tritongym.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, app

runner = CliRunner()


def test_problems_list_shows_the_bundled_set():
    result = runner.invoke(app, ["problems", "list"])
    assert result.exit_code == 0
    assert "13 problems from bundled" in result.output and "04_softmax" in result.output


def test_eval_single_candidate_json_and_exit_codes():
    ok = runner.invoke(
        app, ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--trials", "2",
              "--device", DEVICE, "--json"],
    )  # fmt: skip
    assert ok.exit_code == EXIT_OK, ok.output
    payload = json.loads(ok.stdout.strip().splitlines()[-1])
    assert payload["verdict"] == "ok" and payload["problem"] == "01_vector_add"
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
    ]
    for args in cases:
        result = runner.invoke(app, [*args, "--device", DEVICE])
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert "error:" in result.output and "Traceback" not in result.output


def test_batch_over_a_directory_writes_jsonl(tmp_path):
    directory = tmp_path / "cands"
    directory.mkdir()
    shutil.copy(CANDIDATES / "correct.py", directory / "01_vector_add.py")
    shutil.copy(CANDIDATES / "min_max_single_output.py", directory / "08_row_min_max.py")
    (directory / "not_a_problem.py").write_text("x = 1\n")
    out = tmp_path / "results.jsonl"
    result = runner.invoke(
        app, ["eval", "--candidate", str(directory), "--out", str(out), "--trials", "2", "--device", DEVICE]
    )
    assert result.exit_code == EXIT_FAILED, result.output
    assert "1/2 correct" in result.output and "skipped" in result.output
    rows = {r["problem"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["01_vector_add"]["verdict"] == "ok"
    assert rows["08_row_min_max"]["verdict"] == "wrong_shape"
    assert rows["08_row_min_max"]["candidate"].endswith("08_row_min_max.py")


def test_problems_list_of_a_table_with_custom_columns(tmp_path):
    table = tmp_path / "book.jsonl"
    reference = (CANDIDATES.parent.parent / "tritongym/problems/data/02_silu.py").read_text()
    table.write_text(json.dumps({"uuid": "silu-1", "code": reference}) + "\n")
    wrong = runner.invoke(app, ["problems", "list", str(table)])
    assert wrong.exit_code == EXIT_USAGE and "--source-column" in wrong.output
    right = runner.invoke(app, ["problems", "list", str(table), "--source-column", "code"])
    assert right.exit_code == 0 and "silu-1" in right.output and "batch_size=4096" in right.output


def test_guard_policies_from_the_command_line():
    token = CANDIDATES.parent / "adversarial/candidates/token_triton.py"
    base = ["eval", "--problem", "vector_add", "--candidate", str(token), "--trials", "2", "--device", DEVICE]
    assert runner.invoke(app, base).exit_code == EXIT_OK
    forbid = runner.invoke(app, [*base, "--torch-compute", "forbid"])
    assert forbid.exit_code == EXIT_FAILED and "hack_torch_compute" in forbid.output
    bad = runner.invoke(app, [*base, "--torch-compute", "sometimes"])
    assert bad.exit_code == EXIT_USAGE and "torch_compute must be" in bad.output
    forks = ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "forks.py"), "--trials", "2",
             "--device", DEVICE]  # fmt: skip
    assert "hack_forbidden_api" in runner.invoke(app, forks).output
    assert "hack_threads" in runner.invoke(app, [*forks, "--no-static-checks"]).output


def test_timing_options_from_the_command_line():
    base = ["eval", "--problem", "vector_add", "--candidate", str(CANDIDATES / "correct.py"), "--trials", "2",
            "--device", DEVICE, "--json", "--timing-budget", "2"]  # fmt: skip
    bad = runner.invoke(app, [*base, "--baseline", "jit"])
    assert bad.exit_code == EXIT_USAGE and "baseline must be" in bad.output
    off = runner.invoke(app, [*base, "--no-timing", "--no-profile"])
    payload = json.loads(off.stdout.strip().splitlines()[-1])
    assert off.exit_code == EXIT_OK and payload["speedup"] is None and payload["coverage"] is None
    on = json.loads(runner.invoke(app, base).stdout.strip().splitlines()[-1])
    assert (on["speedup"] is None) is (DEVICE == "cpu")
    assert (on["coverage"] is None) is (DEVICE == "cpu")
