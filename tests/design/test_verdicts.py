"""What the real environment makes of representative renderings (Triton's interpreter on the CPU)."""

import pytest

from helpers import DEVICE
from tritongym.design import Design, FusionSpec, render, spec_problem
from tritongym.env.base import Task
from tritongym.evaluate import EvalConfig

ELTWISE = FusionSpec("e", "eltwise", ("silu", "scale"), "", {"rows": 3, "cols": 50}, {"rows": 3, "cols": 50})
SOFTMAX = FusionSpec("s", "reduce", ("shift",), "softmax", {"rows": 3, "cols": 300}, {"rows": 3, "cols": 300})
SUM = FusionSpec("r", "reduce", (), "sum", {"rows": 3, "cols": 300}, {"rows": 3, "cols": 300})
LINEAR = FusionSpec("m", "matmul", ("relu",), "", {"batch": 10, "in_features": 40, "out_features": 24},
                    {"batch": 10, "in_features": 40, "out_features": 24})  # fmt: skip

CASES = [
    # spec, strategy, layout, block, vec, expected verdict, whether correct
    (ELTWISE, "fused", "tile", 64, 1, "ok", True),
    (ELTWISE, "split", "row", 64, 4, "ok", True),
    (SOFTMAX, "fused", "tile", 64, 1, "ok", True),  # several tiles per row
    (SOFTMAX, "fused", "row", 64, 4, "ok", True),
    (SUM, "split", "tile", 256, 1, "ok", True),
    (LINEAR, "fused", "tile", 64, 1, "ok", True),
    (LINEAR, "split", "row", 64, 4, "ok", True),
    (SOFTMAX, "badorder", "tile", 64, 1, "mismatch", False),  # 300 columns span 5 tiles of 64
    (SOFTMAX, "badorder", "tile", 1024, 1, "ok", True),  # ... but one tile of 1024: the bug is silent
    (LINEAR, "badorder", "tile", 64, 1, "mismatch", False),  # K=40 spans 3 tiles of 16
    (LINEAR, "badorder", "tile", 64, 4, "ok", True),  # one tile of 64
    (ELTWISE, "badorder", "row", 64, 1, "mismatch", False),  # scale then silu is not silu then scale
    (SUM, "nomask", "row", 64, 1, None, False),  # reads past each row (crash under the interpreter)
    (ELTWISE, "fallback", "row", 64, 1, "hack_fallback", False),
    (LINEAR, "fallback", "tile", 64, 1, "hack_fallback", False),
    (ELTWISE, "alias", "row", 64, 1, "hack_input_mutation", False),
    (SUM, "alias", "row", 64, 1, "hack_output_alias", False),
]


@pytest.fixture(scope="module")
def outcomes(design_env):
    tasks = [
        Task(spec_problem(spec).small(), render(Design(strategy, layout, block, 4, 1, vec), spec), label=str(i))
        for i, (spec, strategy, layout, block, vec, *_rest) in enumerate(CASES)
    ]
    for spec in (ELTWISE, LINEAR):
        for torch_compute in ("penalize", "forbid"):
            for strategy in ("lazy", "token"):
                label = f"{spec.name}/{strategy}/{torch_compute}"
                tasks.append(
                    Task(spec_problem(spec).small(), render(Design(strategy, "row", 64, 4, 1, 1), spec), label)
                )
    results = {}
    for torch_compute in ("penalize", "forbid"):
        config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0, torch_compute=torch_compute)
        chosen = [
            t for t in tasks if t.label.endswith(torch_compute) or (torch_compute == "penalize" and "/" not in t.label)
        ]
        for task, result in design_env.evaluate_many(chosen, config):
            results[task.label] = result
    return results


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0].name}-{c[1]}-{c[2]}-{c[3]}-v{c[4]}" for c in CASES])
def test_rendering_gets_its_verdict(outcomes, case):
    _spec, _strategy, _layout, _block, _vec, verdict, correct = CASES[case]
    result = outcomes[str(case)]
    assert result.correct is correct, result.feedback
    if verdict is not None:
        assert result.verdict.value == verdict, result.feedback
    else:
        assert result.verdict.value in ("crash", "runtime_error", "mismatch"), result.feedback
    if verdict == "ok":
        assert not [f for f in result.findings if f.check == "torch_compute"]


@pytest.mark.parametrize("spec", ["e", "m"])
@pytest.mark.parametrize("strategy", ["lazy", "token"])
def test_pytorch_compute_is_reported_or_forbidden(outcomes, spec, strategy):
    penalized = outcomes[f"{spec}/{strategy}/penalize"]
    assert penalized.verdict.value == "ok" and penalized.correct
    assert [f for f in penalized.findings if f.check == "torch_compute"]
    assert outcomes[f"{spec}/{strategy}/forbid"].verdict.value == "hack_torch_compute"
