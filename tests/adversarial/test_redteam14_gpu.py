"""The GPU's verdicts the CPU's are measured against in tests/adversarial/redteam14/README.md (marker
``gpu``; run through the device tool). Written, not run, in the session that wrote them (no GPU)."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam14"
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("table", "verdicts"),
    [("strict", (Verdict.RUNTIME_ERROR,)), ("fallback", (Verdict.MISMATCH, Verdict.UNINITIALIZED_OUTPUT))],
)
def test_a_table_of_the_two_judged_sizes_is_wrong_at_the_full_size(table, verdicts):
    """#1 at 01_vector_add's full size (``n = 16777216``, in no table): a KeyError, or the first 1024
    elements added and the rest unwritten."""
    source = (HERE / "both_sizes_hard_wired.py").read_text().replace('TABLE = "strict"', f'TABLE = "{table}"')
    config = EvalConfig(device="cuda", trials=2, timing=False, profile=False, torch_compute="forbid")
    result = evaluate(find_problem("01_vector_add"), source, config)
    assert result.verdict in verdicts, result.feedback


GPU_FORBID = {"device": "cuda", "trials": 2, "timing": False, "profile": False, "torch_compute": "forbid"}
ROUTES = ["minus_one", "doubled", "split", "float64", "probe", "laundered", "storage"]
COPIED = ["assigned", "as_tensor", "device_object"]


def host_answer(route: str) -> str:
    source = (HERE / "host_answer_handed_over_transformed.py").read_text()
    return source.replace('ROUTE = "minus_one"', f'ROUTE = "{route}"')


@pytest.mark.parametrize("route", ROUTES + COPIED)
def test_an_answer_computed_on_the_host_is_refused_on_a_gpu(route):
    """#2 on a GPU: forward copies its input (or a kernel's copy of it) to the host, by ``.tolist()``,
    its storage, an assignment into a host buffer, ``as_tensor``, ``.to(torch.device("cpu"))``; the
    GPU's runner counts those device-to-host copies (placement.HostReads): ``hack_no_triton`` under
    ``forbid``, as on the CPU (it was ``ok`` and timed at Python's speed)."""
    result = evaluate(find_problem("03_row_sum").small(), host_answer(route), EvalConfig(**GPU_FORBID))
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "to the host" in result.feedback


def test_a_python_function_over_a_device_tensor_is_pytorchs_error():
    """#2e's route on a GPU: ``Tensor.apply_`` of device memory is PyTorch's own error, which the
    CPU's judge copies."""
    result = evaluate(find_problem("03_row_sum").small(), host_answer("apply"), EvalConfig(**GPU_FORBID))
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "only implemented on CPU tensors" in result.feedback


def test_a_host_read_is_a_finding_under_penalize_on_a_gpu():
    """#2 under the default policy: correct, with a ``host_read`` finding (the rewards' coverage 0)."""
    config = EvalConfig(**(GPU_FORBID | {"torch_compute": "penalize"}))
    result = evaluate(find_problem("03_row_sum").small(), host_answer("minus_one"), config)
    assert result.verdict is Verdict.OK, result.feedback
    assert "host_read" in [f.check for f in result.findings], result.findings


HONEST = Path(__file__).parents[1] / "candidates" / "honest"


@pytest.mark.parametrize("name", ["host_final_sum", "class_kernels", "atomics", "argmax_int", "kb_argmin_dim"])
def test_a_few_values_read_back_stay_ok_on_a_gpu(name):
    """#2f on a GPU: honest kernels that read a few values back (a partial sum per block summed by
    ``.tolist()``, an ``.item()`` of a block size, an atomic's accumulator, an index) are ``ok`` with
    no ``host_read`` finding: their copies are a small share of their inputs."""
    from test_honest_candidates import _header, _problem

    source = (HONEST / f"{name}.py").read_text()
    config = EvalConfig(device="cuda", trials=2, timing=False, profile=False)
    result = evaluate(_problem(_header(source, "problem")), source, config)
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    assert "host_read" not in [f.check for f in result.findings], result.findings
