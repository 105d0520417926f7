"""benchmarks/launch_rate.py's instrumented solution: what it reports from inside a runner.

Its forward must pass the environment's static checks (it is judged as a candidate), run the
solution's forward unchanged until its last call, and then fail with the host times it measured,
grouped as the timing's batches are (a call begun within 2 ms of the last one's return is a batch's
later call).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import time
from pathlib import Path

import pytest

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


def _instrumented(module, calls: int) -> dict:
    source = SOLUTION + module.INSTRUMENT.replace(f"== {module.INSTRUMENTED_CALLS}", f"== {calls}")
    namespace: dict = {}
    exec(compile(source, "<instrumented>", "exec"), namespace)
    return namespace


def test_instrumented_solution_passes_the_static_checks():
    module = _launch_rate()
    solution = next(p for p in load_problems() if p.name == "01_vector_add").solution
    assert forbidden_constructs(solution.rstrip() + "\n" + module.INSTRUMENT) == []
    assert f"== {module.INSTRUMENTED_CALLS}:" in module.INSTRUMENT


def test_instrumented_forward_reports_host_times_by_batch_at_its_last_call():
    namespace = _instrumented(_launch_rate(), calls=6)
    model = namespace["ModelNew"](0.004)
    assert [model.forward(1) for _ in range(3)] == [2, 2, 2]  # one batch of three: the solution's answers
    time.sleep(0.02)
    model.forward(1)  # a second batch
    time.sleep(0.02)
    model.forward(1)
    with pytest.raises(RuntimeError, match=r"^LAUNCHRATE ") as raised:
        model.forward(1)  # the sixth call: the same batch as the fifth
    report = ast.literal_eval(str(raised.value)[len("LAUNCHRATE ") :])
    assert report["calls"] == 6 and report["groups"] == 3
    assert 3.5 <= report["first_ms"] < 50 and 3.5 <= report["later_ms"] < 50
    assert len(report["last"]) == 5  # every call after the first: (host ms, ms since the last return)
    gaps = [gap for _, gap in report["last"]]
    assert gaps[1] < 2 and gaps[2] >= 20 and gaps[3] >= 20 and gaps[4] < 2
