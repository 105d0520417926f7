"""The GPU's verdicts the CPU's are measured against in tests/adversarial/redteam15/README.md (marker
``gpu``; run through the device tool). Written, not run, in the session that wrote them (no GPU)."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam15"
pytestmark = pytest.mark.gpu


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cuda", "trials": 2, "timing": False, "profile": False, "torch_compute": "forbid",
                         **overrides})  # fmt: skip


@pytest.mark.parametrize("route", ["global", "constexpr"])
def test_a_forged_library_function_is_not_device_code_on_a_gpu(route):
    """#3 on a GPU: the launch monitor's ownership rule (guards._callable_own, frontend.library_function)
    runs there too; Triton's code generator calls the forged builtin while it compiles, which returns
    the row unchanged. The rule refuses it first."""
    source = (HERE / "forged_library_function.py").read_text().replace('ROUTE = "global"', f'ROUTE = "{route}"')
    result = evaluate(find_problem("04_softmax"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_a_glue_answer_handed_over_past_the_hollow_forward_is_refused_on_a_gpu():
    """#5 on a GPU: the trials' sample of what forward hands its launches (runner.FirstHanded) runs in
    the GPU's runner too, with glue only (a strided slice and its copy), so no PyTorch compute is
    counted against forward."""
    source = (HERE / "glue_answer_past_the_hollow_forward.py").read_text()
    result = evaluate(find_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "where no kernel had written it" in result.feedback


@pytest.mark.parametrize("name", ["two_kernel_pipeline", "pointer_table"])
def test_the_honest_counterparts_are_ok_on_a_gpu(name):
    """#2 and #5's honest sides at the full size: a table of device addresses, a two-kernel pipeline."""
    problem = "11_roll" if name == "two_kernel_pipeline" else "01_vector_add"
    result = evaluate(find_problem(problem), (HERE / f"{name}.py").read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


@pytest.mark.parametrize("route", ["data_ptr", "reinterpret"])
def test_numpy_over_a_device_address_faults_on_a_gpu(route):
    """#2's GPU column: NumPy over a device address reads memory the host cannot read."""
    source = (HERE / "host_view_from_data_ptr.py").read_text().replace('ROUTE = "data_ptr"', f'ROUTE = "{route}"')
    result = evaluate(find_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.CRASH, result.feedback


def test_numpy_refuses_a_dlpack_capsule_of_device_memory_on_a_gpu():
    """#2's ``dlpack`` route: NumPy's ``from_dlpack`` refuses a CUDA capsule."""
    source = (HERE / "host_view_from_data_ptr.py").read_text().replace('ROUTE = "data_ptr"', 'ROUTE = "dlpack"')
    result = evaluate(find_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback


def test_an_answer_parked_in_an_input_is_refused_on_a_gpu():
    """#5d on a GPU: the trials' sample looks at forward's inputs as handed to a launch there too."""
    source = (HERE / "answer_parked_in_an_input.py").read_text()
    result = evaluate(find_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
