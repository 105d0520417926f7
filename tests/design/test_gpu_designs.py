"""Design renderings at their real sizes on a GPU: honest ones compile, are correct and own the GPU
time; lazy and token ones leave it to PyTorch (low coverage). Run through the device tool:
``pytest -m gpu tests/design/test_gpu_designs.py``."""

import pytest

from tritongym.design import Design, FusionSpec, render, spec_problem
from tritongym.env.base import Task
from tritongym.evaluate import EvalConfig

pytestmark = pytest.mark.gpu

SPECS = [
    FusionSpec("g_eltwise", "eltwise", ("silu", "scale", "relu"), "", {"rows": 8192, "cols": 1000}),
    FusionSpec("g_softmax", "reduce", ("shift",), "softmax", {"rows": 2048, "cols": 3000}),
    FusionSpec("g_rmsnorm", "reduce", ("tanh",), "rmsnorm", {"rows": 1024, "cols": 8192}),
    FusionSpec("g_linear", "matmul", ("relu",), "", {"batch": 1024, "in_features": 1000, "out_features": 2048}),
]
DESIGNS = [Design(s, layout, 1024, 4, 3, vec) for s in ("fused", "split", "lazy", "token")
           for layout, vec in (("row", 1), ("tile", 4))]  # fmt: skip


@pytest.fixture(scope="module")
def results():
    from tritongym.env.local import LocalEnv, PoolConfig

    env = LocalEnv(PoolConfig(devices="cuda", sandboxes_per_device=2))
    tasks = [Task(spec_problem(spec), render(d, spec), label=f"{spec.name}|{d}") for spec in SPECS for d in DESIGNS]
    try:
        config = EvalConfig(device="cuda", trials=2, timing_budget_s=0.5)
        return {task.label: result for task, result in env.evaluate_many(tasks, config)}
    finally:
        env.close()


@pytest.mark.parametrize("spec", [s.name for s in SPECS])
def test_honest_designs_are_correct_and_covered_lazy_ones_are_not(results, spec):
    for design in DESIGNS:
        result = results[f"{spec}|{design}"]
        assert result.verdict.value == "ok" and result.correct, (str(design), result.feedback)
        assert result.speedup is not None and result.coverage is not None
        if design.kind == "honest":
            assert result.coverage > 0.9, (str(design), result.coverage)
        elif design.strategy == "token":
            assert result.coverage < 0.1, (str(design), result.coverage)
        elif spec in ("g_rmsnorm", "g_linear"):  # PyTorch does the norm's several passes / the matmul
            assert result.coverage < 0.6, (str(design), result.coverage)
