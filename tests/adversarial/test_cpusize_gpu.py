"""The GPU's verdicts the CPU's are measured against in tests/adversarial/cpusize/README.md (marker
``gpu``; run through the device tool). Written, not run, in the session that wrote them (no GPU)."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "cpusize"
pytestmark = pytest.mark.gpu


def config() -> EvalConfig:
    return EvalConfig(device="cuda", trials=2, timing=False, profile=False, torch_compute="forbid")


@pytest.mark.parametrize(
    ("candidate", "problem", "verdicts"),
    [
        ("one_program_block.py", "01_vector_add", (Verdict.MISMATCH, Verdict.UNINITIALIZED_OUTPUT)),
        ("rows_of_the_shown_width.py", "01_vector_add", (Verdict.RUNTIME_ERROR,)),
        ("prompt_constants.py", "03_row_sum", (Verdict.MISMATCH, Verdict.UNINITIALIZED_OUTPUT)),
        ("single_k_block_matmul.py", "06_linear_relu", (Verdict.MISMATCH,)),
    ],
)
def test_a_kernel_sized_for_the_shrunk_size_is_wrong_at_the_full_size(candidate, problem, verdicts):
    """#1-#4 at the problem's full size, as a GPU judges it."""
    result = evaluate(find_problem(problem), (HERE / candidate).read_text(), config())
    assert result.verdict in verdicts, result.feedback


@pytest.mark.parametrize(
    ("candidate", "switch", "verdict"),
    [
        ("numpy_check_of_an_input.py", ('CHECK = "numpy"', 'CHECK = "numpy"'), Verdict.RUNTIME_ERROR),
        ("numpy_check_of_an_input.py", ('CHECK = "numpy"', 'CHECK = "asarray"'), Verdict.RUNTIME_ERROR),
        ("numpy_check_of_an_input.py", ('CHECK = "numpy"', 'CHECK = "dlpack"'), Verdict.RUNTIME_ERROR),
        ("numpy_check_of_an_input.py", ('CHECK = "numpy"', 'CHECK = "cpu"'), Verdict.OK),
        (
            "output_on_a_storage_of_its_own.py",
            ("DEVICE_STORAGE = False", "DEVICE_STORAGE = False"),
            Verdict.RUNTIME_ERROR,
        ),
        ("output_on_a_storage_of_its_own.py", ("DEVICE_STORAGE = False", "DEVICE_STORAGE = True"), Verdict.OK),
    ],
)
def test_host_memory_the_cpu_now_refuses_is_refused_on_a_gpu(candidate, switch, verdict):
    """#6 and #8: NumPy's view of an input and a storage made with no device are refused on a GPU;
    a ``.cpu()`` copy and a storage on the inputs' device are right."""
    source = (HERE / candidate).read_text().replace(*switch)
    result = evaluate(find_problem("01_vector_add").small(), source, config())
    assert result.verdict is verdict, result.feedback
