"""benchmarks/rl_batch.py: the RL-shaped batch it builds gets the verdicts each kind is made for."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import rl_batch  # noqa: E402

from tritongym.problems import find_problem  # noqa: E402


def test_every_candidate_of_the_batch_has_kernels_of_its_own():
    problem = find_problem("vector_add")
    sources = [task.candidate for _, task in rl_batch.batch([problem], 12)]
    assert len(set(sources)) == 12
    kinds = [kind for kind, _ in rl_batch.batch([problem], 6)]
    assert kinds.count("correct") == 3 and set(kinds) == set(rl_batch.EXPECTED)


def test_a_small_batch_on_the_cpu_gets_the_verdicts_its_kinds_were_made_for(tmp_path):
    out = tmp_path / "rl_batch.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "rl_batch.py"), "--device", "cpu", "--candidates", "6",
         "--sandboxes", "1", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["candidates"] == 6 and report["unexpected"] == {}, report["verdicts_by_kind"]
    assert report["verdicts_by_kind"]["correct"] == {"ok": 3}
    assert report["seconds_per_candidate"] > 0 and "total" in report["median_stage_seconds"]
    assert 0 < report["pool_ready_s"] < report["wall_s"] and report["seconds_per_candidate_after_start"] > 0
    assert report["sum_stage_seconds"]["total"] >= report["median_stage_seconds"]["total"]
    assert report["gpu_exclusive_s"] == 0 and report["timing"] == {"timed": 0}  # no timing on the CPU
    assert report["critical_path"]["exclusive_s"] == 0 and report["critical_path"]["shared_work_s"] > 0
    assert {"imports", "zygote", "first_spare"} <= set(report["judge_startup_seconds"])  # no GPU's parts here
    assert "contexts" not in report["judge_startup_seconds"]
    assert report["median_stage_seconds"]["runner_start"] > 0
    assert report["speedups"] == [None] * 6  # in the batch's order; none timed on the CPU


def test_the_timings_precision_is_summed_up_from_each_speedups_interval():
    from types import SimpleNamespace as NS

    def timed(speedup, low, high, stopped="budget", reps=9, contended=0):
        stats = NS(speedup_ci=[low, high], stopped=stopped, reps=reps, invalid_reps=contended,
                   contended_reps=contended)  # fmt: skip
        return NS(speedup=speedup, timing=stats)

    results = [timed(2.0, 1.9, 2.1), timed(1.0, 0.99, 1.01, "target", 31), timed(None, 0.5, 3.0, "ceiling", 2, 4),
               NS(speedup=None, timing=None)]  # fmt: skip
    summary = rl_batch.timing_precision(results)
    assert summary["timed"] == 3 and summary["with_speedup"] == 2
    assert summary["stopped"] == {"budget": 1, "target": 1, "ceiling": 1}
    assert summary["median_reps"] == 9 and summary["contended_reps"] == 4
    assert summary["ci_half_width"] == {"median": 0.03, "p90": 0.01, "max": 0.05}  # half-widths 5% and 1% (p90: lower)
    assert rl_batch.timing_precision([NS(speedup=None, timing=None)]) == {"timed": 0}


def test_two_runs_compare_candidate_by_candidate(tmp_path):
    first = {"speedups": [2.0, None, 1.0, 4.0, 3.0]}
    second = {"speedups": [2.2, 1.5, None, 4.0, 2.7]}
    assert rl_batch.paired(first, second) == {"paired": 3, "median": 1.0, "p5": 0.9, "p95": 1.0, "min": 0.9,
                                              "max": 1.1}  # fmt: skip
    assert rl_batch.paired(first, {"speedups": [None] * 5}) == {"paired": 0}
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, report in zip(paths, (first, second), strict=True):
        path.write_text(json.dumps(report))
    script = str(ROOT / "benchmarks" / "rl_batch.py")
    done = subprocess.run([sys.executable, script, "--compare", *map(str, paths)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["paired"] == 3


def test_the_batch_after_the_start_splits_into_the_exclusive_part_and_the_shared_work_beside_it():
    # session 13 call 3's run (a452d36): 11.05 s start, 40.62 s exclusive, 335.26 judge-seconds, 160.48 of them waits
    sums = {"total": 335.26, "gpu_lock_wait": 160.48}
    path = rl_batch.critical_path(98.58, 11.05, 40.62, sums, 1)
    assert path == {"after_start_s": 87.53, "exclusive_s": 40.62, "without_timing_s": 46.91, "shared_work_s": 134.16,
                    "judges_at_once": 2.86}  # fmt: skip
    two = rl_batch.critical_path(98.58, 11.05, 40.62, sums, 2)  # the exclusive part is each GPU's own
    assert two["exclusive_s"] == 20.31 and two["judges_at_once"] == round(134.16 / (2 * (87.53 - 20.31)), 2)
    assert rl_batch.critical_path(10.0, 10.0, 0.0, {}, 1)["judges_at_once"] is None  # nothing after the start
    assert rl_batch.gpu_count("cuda:0,1") == 2 and rl_batch.gpu_count("cuda:3") == 1 and rl_batch.gpu_count("cpu") == 1
