"""benchmarks/launch_rate.py: the instrumented solution's report from inside a runner, and its problems.

The instrumented forward must pass the environment's static checks (it is judged as a candidate), run
the solution's forward unchanged, say on stderr the host time of every call and whether the runner's
launch monitor was active (a trial: guarded), and run the probes once, at its first unguarded call
(the timing's first batch). ``runner_report`` groups the unguarded calls as the timing's batches are.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import time
from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig
from tritongym.evaluate.guards import LaunchMonitor
from tritongym.evaluate.static_checks import forbidden_constructs
from tritongym.problems import load_problems

ROOT = Path(__file__).parent.parent


def _launch_rate():
    spec = importlib.util.spec_from_file_location("launch_rate_under_test", ROOT / "benchmarks" / "launch_rate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SOLUTION = """
class ModelNew:
    def __init__(self, delay):
        self.delay = delay

    def forward(self, x):
        import time
        time.sleep(self.delay)
        return x + 1
"""


def test_instrumented_solution_passes_the_static_checks():
    module = _launch_rate()
    solution = next(p for p in load_problems() if p.name == "01_vector_add").solution
    assert forbidden_constructs(solution.rstrip() + "\n" + module.INSTRUMENT) == []


def test_instrumented_forward_reports_every_call_and_probes_once_outside_the_guards():
    module = _launch_rate()
    namespace: dict = {}
    exec(compile(SOLUTION + module.INSTRUMENT, "<instrumented>", "exec"), namespace)
    model = namespace["ModelNew"](0.004)
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        with LaunchMonitor("<instrumented>"):  # a trial: Triton's run is the monitor's wrapper
            assert model.forward(1) == 2
        assert "LAUNCHRATE probe" not in said.getvalue()
        assert [model.forward(1) for _ in range(3)] == [2, 2, 2]  # one batch of three: the probes first
        time.sleep(0.02)
        model.forward(1)  # a second batch
        time.sleep(0.02)
        model.forward(1)
        model.forward(1)
    lines = said.getvalue().splitlines()
    assert sum(line.startswith("LAUNCHRATE probe ") for line in lines) == 1
    calls = [line.split() for line in lines if line.startswith("LAUNCHRATE call ")]
    assert [c[2] for c in calls] == ["1", "2", "3", "4", "5", "6", "7"]
    assert [c[5] for c in calls] == ["1", "0", "0", "0", "0", "0", "0"]
    assert all(4000 <= int(c[3]) < 50000 for c in calls)  # each call's host time: the 4 ms sleep
    report = module.runner_report(said.getvalue())
    assert report["guarded_calls"] == 1
    assert report["first_calls"] == 3 and report["later_calls"] == 3  # batches of 3, 1 and 2 calls
    assert 4 <= report["first_ms"] < 50 and 4 <= report["later_ms"] < 50
    probe = report["probe"]
    assert 1 < probe["python_ns"] < 10000 and probe["threads"] >= 1
    assert probe["launchers"] == [] and probe["profile_hook"] == "None"


def test_runner_report_of_no_output():
    report = _launch_rate().runner_report("")
    assert report == {"probe": None, "guarded_calls": 0, "first_calls": 0, "later_calls": 0, "first_ms": None,
                      "later_ms": None}  # fmt: skip


def test_many_ops_problem_and_solution(tmp_path):
    import torch

    module = _launch_rate()
    problem_path, solution_path = module.write_many_ops(tmp_path, 7)
    problem = load_problems(problem_path)[0]
    assert problem.name == "7_ManyTinyOps"
    source = solution_path.read_text()
    assert forbidden_constructs(source) == [] and "range(7)" in source and "range(7)" in problem.source
    namespace: dict = {}
    exec(compile(problem.source, str(problem_path), "exec"), namespace)
    from tritongym.evaluate.judge.speed import forward_ops

    x = torch.ones(4)
    assert forward_ops(namespace["Model"](), [x]) == 14  # two launches a step
    assert torch.allclose(namespace["Model"]()(x), torch.full((4,), 1.0), atol=1e-6)  # 1 is its fixed point


@pytest.mark.timeout(120)
def test_judged_instrumented_solution_is_ok_and_its_trials_are_guarded(judge, tmp_path):
    module = _launch_rate()
    problem_path, solution_path = module.write_many_ops(tmp_path, 3)
    problem = load_problems(problem_path)[0]
    source = solution_path.read_text().rstrip() + "\n" + module.INSTRUMENT
    result = judge(problem, source, EvalConfig(device="cpu", torch_compute="allow", output_limit_bytes=1 << 20))
    assert str(result.verdict) == "ok", result.feedback
    report = module.runner_report(result.stderr)
    assert report["guarded_calls"] >= 3 and report["first_calls"] == report["later_calls"] == 0
    assert report["probe"] is None  # no timing on the CPU: every call was a guarded one


def test_pool_entries():
    module = _launch_rate()
    choice, off, eight = (module.pool_settings(e) for e in ("choice", "choice/off", "8"))
    assert (choice.runner_work_queues, choice.launch_queue_scale) == (None, "4x")
    assert (off.runner_work_queues, off.launch_queue_scale) == (None, None)
    assert (eight.runner_work_queues, eight.launch_queue_scale) == (8, "4x")
    for bad in ("choice/on", "eight"):
        with pytest.raises(ValueError):
            module.pool_settings(bad)
