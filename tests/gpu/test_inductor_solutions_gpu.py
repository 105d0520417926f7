"""`tritongym solutions inductor` on a GPU: torch.compile's code for bundled problems, judged at full
size against the torch.compile baseline. Run through the device tool (benchmarks/gpu_run.sh tests)."""

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem
from tritongym.solutions.inductor import generate

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["linear_relu", "softmax", "layernorm"])
def test_inductor_solutions_are_ok_with_their_triton_kernels_as_their_own(name, tmp_path):
    problem = find_problem(name)
    (outcome,) = generate([problem], tmp_path, "cuda")
    assert outcome.status == "written", outcome.reason
    source = (tmp_path / f"{problem.name}.py").read_text()
    config = EvalConfig(device="cuda", trials=2, timing_budget_s=2.0, baseline="compile")
    result = evaluate(problem, source, config)
    assert result.verdict is Verdict.OK, result.feedback
    assert result.coverage is not None and result.coverage > 0, result.kernels
    assert any(k.own and k.name.startswith("triton_") for k in result.kernels), result.kernels
    if outcome.extern_calls:
        assert any(not k.own for k in result.kernels), result.kernels
    assert result.speedup is not None and 0.5 < result.speedup < 2.0, result.speedup
