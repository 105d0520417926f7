"""Kernels sized for the one shrunk size a CPU run judges (tests/adversarial/cpusize/README.md): each is
`ok` at the problem's small sizes alone and fails at the full size a GPU judges; the CPU's trial at a
second size (``Problem.resized``) gives it the GPU's verdict. The candidates run in the session's warm
CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import Problem, find_problem

HERE = Path(__file__).parent / "cpusize"
CASES = [
    ("one_program_block.py", "01_vector_add", Verdict.MISMATCH),
    ("rows_of_the_shown_width.py", "01_vector_add", Verdict.RUNTIME_ERROR),
    ("prompt_constants.py", "03_row_sum", Verdict.MISMATCH),
    ("single_k_block_matmul.py", "06_linear_relu", Verdict.MISMATCH),
    ("../redteam12/block_sized_for_the_small_problem.py", "04_softmax", Verdict.MISMATCH),
]


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize(("candidate", "problem", "verdict"), CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_a_kernel_sized_for_the_shrunk_size_fails_at_the_second(judge, candidate, problem, verdict):
    source = (HERE / candidate).read_text()
    shrunk = small_problem(problem)
    result = judge(shrunk, source, config())
    assert result.verdict is verdict, result.feedback
    assert "trial 3 of 3" in result.feedback.lower()
    drawn = re.escape(shrunk.resized().size_notice).replace(r"\->", "->")
    drawn = re.sub(r"->\d+", r"->\\d+", drawn)  # the judge draws each job's second size
    assert re.search(f"other sizes than the problem shows: {drawn}", result.feedback), result.feedback
    # the same problem at one size (what the judge had before it ran a second): ok
    one_size = judge(replace(shrunk, shrunk={}), source, config())
    assert one_size.verdict is Verdict.OK and one_size.trials == 2, one_size.feedback


def test_a_bundled_solution_is_right_at_both_sizes(judge):
    problem = small_problem("06_linear_relu")
    result = judge(problem, problem.solution, config())
    assert result.verdict is Verdict.OK, result.feedback
    assert result.trials == 3
    # its blocks of 64 rows reach 4 times the 16 rows of the input and the output: the batch grows past them
    shown = r"the last at other sizes than the problem shows: batch_size 16->(\d+)\)"
    assert int(re.search(shown, result.feedback)[1]) > 64, result.feedback


def test_a_problem_at_its_own_sizes_runs_no_second(judge):
    """Nothing shrunk (a GPU-sized run, a purpose-written small problem): the trials asked for, at its size."""
    problem = find_problem("01_vector_add").with_sizes(n=1000)
    assert problem.resized() is None
    source = (HERE / "one_program_block.py").read_text()
    result = judge(problem, source, config())
    assert result.verdict is Verdict.OK and result.trials == 2, result.feedback


REFUSES_OTHER_SIZES = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


dim = 100


def get_inputs():
    assert dim % 25 == 0, "dim must be a multiple of 25"
    return [torch.randn(dim)]


def get_init_inputs():
    return []
"""

DOUBLE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
"""


def test_a_second_size_the_reference_refuses_leaves_the_problems_own(judge):
    """No second size of ``dim`` (132, 140, ...: 4 by an odd factor prime to 25) is a multiple of 25:
    the reference fails there, which is nothing the candidate did; it is judged at the problem's
    sizes (its last trial too: the judge draws the second size just before it), and a finding says why."""
    problem = Problem(name="refuses_other_sizes", source=REFUSES_OTHER_SIZES, shrunk={"dim": (4096, 100)})
    assert problem.resized().sizes["dim"] == 132
    result = judge(problem, DOUBLE, config())
    assert result.verdict is Verdict.OK and result.trials == 3, result.feedback
    assert "other sizes than the problem shows" not in result.feedback
    (finding,) = [f for f in result.findings if f.check == "sizes"]
    assert re.search(r"the reference failed at the second size \(dim 100->\d+", finding.message)
    assert "multiple of 25" in finding.message


@pytest.mark.parametrize(("check", "verdict"), [("numpy", Verdict.RUNTIME_ERROR), ("asarray", Verdict.RUNTIME_ERROR),
                                                ("dlpack", Verdict.RUNTIME_ERROR), ("cpu", Verdict.OK)])  # fmt: skip
def test_numpys_view_of_a_device_tensor_is_refused_as_on_a_gpu(judge, check, verdict):
    """Red team 12, open: ``x.numpy()`` of an input (a GPU's device memory) was allowed on the CPU.
    (``penalize``: under ``forbid`` the ``.cpu()`` copy of a whole input is a host read, red team 14 #2.)"""
    source = (HERE / "numpy_check_of_an_input.py").read_text().replace('CHECK = "numpy"', f'CHECK = "{check}"')
    result = judge(small_problem("01_vector_add"), source, config(torch_compute="penalize"))
    assert result.verdict is verdict, result.feedback
    if verdict is Verdict.RUNTIME_ERROR:
        expected = "Unsupported device in DLTensor" if check == "dlpack" else "can't convert cuda:0 device type tensor"
        assert expected in result.feedback


def test_numpys_view_is_refused_only_of_what_a_gpu_holds_in_device_memory():
    """Unit: under HostTensors, NumPy's view of a tensor that is not marked is refused; of a marked one
    (a factory without a device, ``torch.from_numpy``, a ``.cpu()`` copy) and with ``force=True``
    (which copies) it is not."""
    import numpy as np
    import torch

    from tritongym.evaluate.placement import HostTensors

    device_tensor = torch.randn(4)
    with HostTensors() as host:
        for refused in (device_tensor.numpy, lambda: np.asarray(device_tensor), (device_tensor * 2).numpy):
            with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
                refused()
        on_host = (torch.empty(3), torch.arange(3, device="cpu"), torch.from_numpy(np.ones(3)), device_tensor.cpu())
        for allowed in on_host:  # what a GPU holds in host memory too (a device named "cpu" by a string)
            assert isinstance(allowed.numpy(), np.ndarray)
        assert device_tensor.numpy(force=True).shape == (4,)
        with pytest.raises(BufferError, match="Unsupported device in DLTensor"):
            np.from_dlpack(device_tensor)  # NumPy's DLPack view: refused as on a GPU
        assert not host.made(torch.from_dlpack(device_tensor))  # PyTorch's own: an alias of device memory
        assert host.made(torch.from_dlpack(np.ones(2))) and np.from_dlpack(torch.empty(2)).shape == (2,)
    assert device_tensor.numpy().shape == (4,)  # outside the runner's watch: untouched


def test_an_output_made_by_inductors_cpu_helper_is_host_memory(judge):
    """Red team 12, open: ``empty_strided_cpu`` allocates below the dispatcher, where no mode sees it
    (`ok`); on a GPU it is host memory and Triton refuses the launch. The CPU's Inductor solutions,
    which called it for their buffers, now make them on their inputs' device."""
    source = (Path(__file__).parent / "redteam12" / "output_from_inductors_cpu_helper.py").read_text()
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "_empty_strided_cpu" in result.feedback


def test_inductors_gpu_helper_makes_the_cpus_device_memory():
    """Unit: under HostTensors ``empty_strided_cuda`` (KernelBook's GPU rows) allocates on the CPU,
    unmarked, and ``empty_strided_cpu`` is marked; outside, both are PyTorch's own again."""
    import torch

    from tritongym.evaluate.placement import HostTensors

    guards = torch._C._dynamo.guards
    cuda, cpu = guards._empty_strided_cuda, guards._empty_strided_cpu
    with HostTensors() as host:
        device = guards._empty_strided_cuda((2, 3), (3, 1), torch.float32)
        assert device.shape == (2, 3) and device.stride() == (3, 1) and not host.made(device)
        assert "_empty_strided_cpu" in host.made(guards._empty_strided_cpu((4,), (1,), torch.float32))
    assert guards._empty_strided_cuda is cuda and guards._empty_strided_cpu is cpu


@pytest.mark.parametrize(("device_storage", "verdict"), [(False, Verdict.RUNTIME_ERROR), (True, Verdict.OK)])
def test_an_output_on_a_storage_made_without_a_device_is_host_memory(judge, device_storage, verdict):
    """Red team 12, open: ``torch.UntypedStorage(n)`` then ``set_`` made an output no check marked
    (`ok`); on a GPU that storage is host memory. Made with ``device=a.device`` it is right there too."""
    source = (HERE / "output_on_a_storage_of_its_own.py").read_text()
    source = source.replace("DEVICE_STORAGE = False", f"DEVICE_STORAGE = {device_storage}")
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is verdict, result.feedback
    if verdict is Verdict.RUNTIME_ERROR:
        assert "made by torch.UntypedStorage without a device" in result.feedback


@pytest.mark.parametrize(("device_storage", "verdict"), [(False, Verdict.RUNTIME_ERROR), (True, Verdict.OK)])
def test_an_output_on_a_legacy_typed_storage_is_host_memory(judge, device_storage, verdict):
    """Open after red team 12: ``torch.FloatStorage(n)`` then ``set_`` made an output no check marked
    (``TypedStorage`` names ``torch.device("cpu")`` to the UntypedStorage it makes: `ok`); on a GPU a legacy
    storage is host memory. A ``torch.TypedStorage`` made with ``device=a.device`` is right there too."""
    source = (HERE / "output_on_a_legacy_typed_storage.py").read_text()
    source = source.replace("DEVICE_STORAGE = False", f"DEVICE_STORAGE = {device_storage}")
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is verdict, result.feedback
    if verdict is Verdict.RUNTIME_ERROR:
        assert "made by a typed storage (torch.FloatStorage...) without a device" in result.feedback


def test_legacy_and_typed_storages_are_marked_as_their_device_is_named():
    """Unit: under HostTensors every legacy typed storage (by size, from data) and a ``torch.TypedStorage``
    with no device or the CPU named by a string is host memory, poisoned when made by size; one made on a
    tensor's device, or wrapping a device storage, is not; ``TypedStorage.__init__`` is PyTorch's again after."""
    import warnings

    import torch

    from tritongym.evaluate.placement import POISON_BYTE, HostTensors

    init = torch.TypedStorage.__dict__["__init__"]
    device_tensor = torch.randn(4)
    with HostTensors() as host, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage is deprecated
        made = [
            (torch.FloatStorage(4), True), (torch.IntStorage([1, 2, 3, 4]), True),
            (torch.TypedStorage(4, dtype=torch.float32), True),
            (torch.TypedStorage(4, dtype=torch.float32, device="cpu"), True),
            (torch.TypedStorage(4, dtype=torch.float32, device=device_tensor.device), False),
            (torch.FloatStorage(wrap_storage=device_tensor.untyped_storage()), False),
        ]  # fmt: skip
        for storage, marked in made:
            on_it = torch.empty(0, device=device_tensor.device, dtype=storage.dtype).set_(storage, 0, (4,), (1,))
            assert bool(host.made(on_it)) is marked, storage
        assert set(bytes(made[0][0].untyped())) == {POISON_BYTE}
        assert torch.TypedStorage.__dict__["__init__"] is not init
    assert torch.TypedStorage.__dict__["__init__"] is init


def test_a_storage_made_by_size_is_marked_and_poisoned_while_watched():
    """Unit: under HostTensors a storage made by size holds the poison; one made with no device (or the
    CPU named by a string) is host memory, and so is every tensor ``set_`` on it; ``torch.UntypedStorage``
    has its own constructor again afterwards."""
    import torch

    from tritongym.evaluate.placement import POISON_BYTE, HostTensors

    device_tensor = torch.randn(4)
    with HostTensors() as host:
        for made, marked in ((torch.UntypedStorage(16), True), (torch.UntypedStorage(16, device="cpu"), True),
                             (torch.UntypedStorage(16, device=device_tensor.device), False)):  # fmt: skip
            assert set(bytes(made)) == {POISON_BYTE}
            on_it = torch.empty(0, device=device_tensor.device).set_(made, 0, (4,), (1,))
            assert bool(host.made(on_it)) is marked
        alias = torch.empty(0, device=device_tensor.device).set_(device_tensor.untyped_storage(), 0, (4,), (1,))
        assert not host.made(alias)  # a device tensor's own storage stays device memory
    assert "__new__" not in torch.UntypedStorage.__dict__
    assert torch.UntypedStorage(8).nbytes() == 8
