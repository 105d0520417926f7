"""Purpose-built trajectory records for the bench tests."""

from __future__ import annotations

from tritongym.agent.records import TurnRecord
from tritongym.evaluate.result import EvalResult, Finding, Verdict


def record(
    problem: str,
    sample: int,
    turn: int,
    verdict: str,
    speedup: float | None = None,
    coverage: float | None = None,
    iteration: int = 0,
    flagged: bool = False,
) -> TurnRecord:
    result = None
    if verdict != "no_code":
        v = Verdict(verdict)
        findings = [Finding("implausible_speedup", "faster than the roofline")] if flagged else []
        result = EvalResult(
            problem=problem,
            verdict=v,
            feedback="",
            compiled=v.compiled,
            correct=v is Verdict.OK,
            speedup=speedup,
            coverage=coverage,
            findings=findings,
        ).to_dict()
    return TurnRecord(
        run_id="run",
        problem=problem,
        sample=sample,
        turn=turn,
        iteration=iteration,
        messages=[{"role": "user", "content": "write a kernel"}],
        completion="```python\nclass ModelNew: ...\n```",
        verdict=verdict,
        code=None if verdict == "no_code" else "class ModelNew: ...",
        result=result,
        reward=None if verdict == "infrastructure_error" else 0.0,
    )
