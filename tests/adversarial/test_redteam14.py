"""The fourteenth red team's breaks (tests/adversarial/redteam14/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest
import torch
import triton

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge.judge import host_read
from tritongym.evaluate.placement import HostTensors, launch_pointers
from tritongym.problems.sizes import SECOND_SIZE_GROWTH, input_elements, second_value, second_values

HERE = Path(__file__).parent / "redteam14"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize(("table", "verdict"), [("strict", Verdict.RUNTIME_ERROR), ("fallback", Verdict.MISMATCH)])
def test_a_table_of_both_sizes_fails_at_a_drawn_second_size(judge, table, verdict):
    """#1: the second size was a fixed function of the small and the full size (1000 of 16777216 gave
    1032 in every job), so a kernel tabled for both was ``ok`` on the CPU, and wrong at the full size
    (a GPU's). The judge now draws each job's second size in secret among the sizes that share what
    the small and the full size share (in its own process since red team 24: nothing of a test's
    reaches it). One draw in some 150 is the tabled 1032: such a job is judged again."""
    problem = small_problem("01_vector_add")
    assert second_value(16777216, 1000) == 1032  # the rule's one size, the table's
    source = (HERE / "both_sizes_hard_wired.py").read_text().replace('TABLE = "strict"', f'TABLE = "{table}"')
    for _ in range(3):
        result = judge(problem, source, config())
        if "n 1000->1032" not in result.feedback:
            break
    assert result.verdict is verdict, result.feedback
    assert re.search(r"other sizes than the problem shows: n 1000->\d+", result.feedback)


@pytest.mark.parametrize("name", ["01_vector_add", "03_row_sum", "04_softmax", "06_linear_relu"])
def test_the_drawn_second_sizes_are_many_valid_and_within_the_cost_bound(name):
    """#1: what the draw may give: above every power of two a block covering the small size would be,
    sharing the full and the small size's divisors, the inputs within the growth bound, and more than
    one value for every constant it grows (the set a table would have to hold)."""
    problem = small_problem(name)
    elements = input_elements(problem.source)[0]
    seen: dict[str, set[int]] = {}
    draw = random.Random(14)
    for _ in range(40):
        resized = problem.resized(draw)
        assert input_elements(resized.source)[0] <= SECOND_SIZE_GROWTH * elements
        for constant, (small, value) in resized.shrunk.items():
            if constant not in problem.shrunk:
                continue  # derived from a grown one
            full = problem.shrunk[constant][0]
            assert value in second_values(full, small)
            assert value > 1 << (small - 1).bit_length() and value % math.gcd(full, small) == 0
            seen.setdefault(constant, set()).add(value)
    assert seen
    assert any(len(values) > 1 for values in seen.values()), seen


ROUTES = ["minus_one", "doubled", "split", "float64", "probe", "laundered", "storage"]
COPIED = ["assigned", "as_tensor", "device_object"]
"""#2's host copies of ``x`` that Python reads: ``h[:] = x``, ``torch.as_tensor(x, device="cpu")``,
``x.to(torch.device("cpu"))`` (the first two counted nothing before the GPU's count was written)."""


@pytest.mark.parametrize("route", ROUTES + COPIED)
def test_an_answer_computed_on_the_host_is_refused_however_it_is_handed_over(judge, route):
    """#2: row sums by Python over ``x.tolist()`` (or over a kernel's copy of ``x``), handed to a kernel
    transformed (less 1, doubled, split in two, in float64) or only outside the hollow forward (a probe
    kernel's flag tells it apart): ``ok`` under ``forbid``. Forward copied its whole input to the host,
    which on a GPU is a device-to-host copy of the data the kernels should have read."""
    source = (HERE / "host_answer_handed_over_transformed.py").read_text()
    source = source.replace('ROUTE = "minus_one"', f'ROUTE = "{route}"')
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "to the host" in result.feedback


def test_a_python_function_over_an_inputs_elements_is_refused_as_on_a_gpu(judge):
    """#2d: ``Tensor.apply_`` runs Python over a tensor's elements (no op recorded, no value read by a
    torch function): ``ok`` under ``forbid`` with the row sums summed in its callback. A GPU's PyTorch
    refuses it for device memory: ``runtime_error``."""
    source = (HERE / "host_answer_handed_over_transformed.py").read_text()
    result = judge(small_problem("03_row_sum"), source.replace('ROUTE = "minus_one"', 'ROUTE = "apply"'), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "only implemented on CPU tensors" in result.feedback


def test_every_spelling_of_a_host_read_is_counted_and_host_memory_is_not():
    """#2's count (placement.host_read_bytes): each way of reading a device tensor's values into Python
    or host memory counts its bytes (on a GPU, a device-to-host copy), its storage handed to code
    other than Triton's and the judge's too; reading what is already in host memory (a ``.cpu()``
    copy, counted once when made) counts nothing."""
    x = torch.arange(64, dtype=torch.float32)
    reads = {
        "tolist": lambda: x.tolist(),
        "item": lambda: x[0].item(),
        "float": lambda: float(x[1]),
        "int": lambda: int(x[1]),
        "bool": lambda: bool(x[1]),
        "format": lambda: f"{x[2]:.3f}",
        "repr": lambda: repr(x),
        "numpy_copy": lambda: x.numpy(force=True),
        "cpu": lambda: x.cpu(),
        "to_cpu": lambda: x.to("cpu"),
        "storage": lambda: x.untyped_storage().tolist(),
        "typed_storage": lambda: x.storage().tolist(),
    }
    for name, read in reads.items():
        host = HostTensors()
        with host:
            read()
        assert host.host_bytes >= 4, name
        assert host.host_bytes <= 2 * x.nbytes, name  # a typed storage reads its values through item() too
    host = HostTensors()
    with host:
        copy = x.cpu()
        assert host.host_bytes == x.nbytes
        copy.tolist(), float(copy[3]), copy.numpy()
        assert host.host_bytes == x.nbytes  # host memory read on the host: no copy
        buffer = torch.empty(64)  # made without a device: host memory on a GPU
        buffer.copy_(x)  # a device-to-host copy
        assert host.host_bytes == 2 * x.nbytes
        x.shape, x.numel(), x.dtype, x.device  # what a launch needs: no values read
        host.made(x), launch_pointers([("0", x)])  # the judge's own look at a storage (and Triton's)
        assert host.host_bytes == 2 * x.nbytes


def test_a_few_values_read_back_are_not_a_host_read():
    """#2's honest side: a partial result per block or a flag read back is a small share of the inputs."""
    inputs = [torch.zeros(64, 64)]
    assert host_read(8, inputs) is None  # under the floor
    assert host_read(64 * 64 * 4 // 16, inputs) is None  # a sixteenth: one partial sum per 16 values
    assert host_read(64 * 64 * 4 // 8, inputs) == (2048, 16384)
    assert host_read("a lie", inputs) is None


@pytest.mark.parametrize("forge", ["file", "globals"])
def test_a_storage_read_by_code_that_claims_tritons_file_is_counted(judge, forge):
    """#2d forged: row sums decoded from the input's storage by a function whose code object names
    Triton's file (and, for ``globals``, runs over a Triton module's namespace): ``ok`` under
    ``forbid`` while the calling frame's file told Triton's requests for a storage from forward's.
    The caller is now told by its code object's identity among those Triton and the judge had loaded
    before the candidate's import, run over their own module's globals."""
    source = (HERE / "storage_read_by_code_named_triton.py").read_text()
    source = source.replace('FORGE = "file"', f'FORGE = "{forge}"')
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "to the host" in result.feedback


def test_code_named_after_tritons_file_is_not_tritons():
    """#2g's count (placement.OwnCode): a storage asked for by a function whose code object names
    Triton's file, or runs over a Triton module's globals too, is forward's read; the judge's own
    request (``launch_pointers``) is not."""
    x = torch.arange(64, dtype=torch.float32)

    def storage(t):
        return t.untyped_storage()

    storage.__code__ = storage.__code__.replace(co_filename=triton.jit.__code__.co_filename)
    rebuilt = type(storage)(storage.__code__, triton.jit.__globals__, "storage")
    host = HostTensors()
    with host:
        launch_pointers([("0", x)])
        assert host.host_bytes == 0
        storage(x)
        assert host.host_bytes == x.nbytes
        rebuilt(x)
        assert host.host_bytes == 2 * x.nbytes
