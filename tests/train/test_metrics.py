"""The trainer's rollout metrics are tritongym.bench.metrics' definitions (fast@p: Dr.Kernel convention)."""

import math

import pytest

from tritongym.agent.episodes import Episode
from tritongym.agent.records import TurnRecord
from tritongym.evaluate.result import EvalResult, Finding, Verdict
from tritongym.problems import Problem
from tritongym.train.metrics import rollout_metrics

PROBLEM = Problem("p", "class Model:\n    pass\n")


def turn(sample: int, verdict: str, speedup: float | None = None, coverage: float | None = None,
         checks: tuple[str, ...] = ()) -> TurnRecord:  # fmt: skip
    result = None
    if verdict in Verdict.__members__.values():
        v = Verdict(verdict)
        result = EvalResult("p", v, "", compiled=v.compiled, correct=v is Verdict.OK, speedup=speedup,
                            coverage=coverage, findings=[Finding(c, "m") for c in checks]).to_dict()  # fmt: skip
    return TurnRecord(run_id="r", problem="p", sample=sample, turn=0, messages=[], completion="", verdict=verdict,
                      code=None if verdict == "no_code" else "x", result=result, reward=0.0)  # fmt: skip


def episodes(*records: TurnRecord) -> list[Episode]:
    return [Episode(PROBLEM, r.sample, [r]) for r in records]


def test_rates_follow_the_bench_definitions():
    m = rollout_metrics(episodes(
        turn(0, "ok", speedup=1.0, coverage=0.2), turn(1, "ok", speedup=1.5, coverage=0.9),
        turn(2, "compile_error"), turn(3, "hack_no_triton"), turn(4, "no_code"), turn(5, "infrastructure_error"),
    ))  # fmt: skip
    assert m["turns"] == 5 and m["infra_turns"] == 1
    assert m["correct_rate"] == pytest.approx(2 / 5) and m["hack_rate"] == pytest.approx(1 / 5)
    assert m["compile_rate"] == pytest.approx(3 / 5)  # ok, ok, hack_no_triton
    assert m["fast@1"] == pytest.approx(2 / 5)  # speedup 1.0 counts: >= p (drkernel)
    assert m["fast@1.2"] == pytest.approx(1 / 5)
    assert m["coverage_mean"] == pytest.approx(0.55) and m["lazy_rate"] == pytest.approx(1 / 5)
    assert m["episode_correct_rate"] == pytest.approx(2 / 5)  # the infrastructure-only episode is left out


def test_unmeasured_and_unevaluated_rates_are_nan():
    cpu = rollout_metrics(episodes(turn(0, "ok"), turn(1, "mismatch")))
    assert cpu["correct_rate"] == 0.5 and math.isnan(cpu["fast@1"]) and math.isnan(cpu["coverage_mean"])
    text_only = rollout_metrics(episodes(turn(0, "unevaluated"), turn(1, "unevaluated")))
    assert text_only["verdict/unevaluated"] == 1.0 and math.isnan(text_only["correct_rate"])


def test_the_lazy_rate_counts_unprofiled_lazy_findings():
    """On the CPU a correct turn with a torch_compute or host_read finding is lazy (red: 0, no coverage)."""
    cpu = rollout_metrics(episodes(
        turn(0, "ok"), turn(1, "ok", checks=("torch_compute",)), turn(2, "ok", checks=("host_read",)),
        turn(3, "mismatch", checks=("torch_compute",)),
    ))  # fmt: skip
    assert cpu["lazy_rate"] == pytest.approx(2 / 4) and math.isnan(cpu["coverage_mean"])
