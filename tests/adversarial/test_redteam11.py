"""The eleventh red team's breaks (tests/adversarial/redteam11/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "redteam11"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def test_a_data_race_caught_in_the_constructor_still_fails(judge):
    """#1b: the same in ``__init__``: what the constructor made is the racy kernel's on a GPU."""
    result = judge(small_problem("vector_add"), (HERE / "race_in_constructor.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "data race in kernel racy_sum" in result.feedback and "while constructing" in result.feedback


def test_a_data_race_caught_by_forward_still_fails(judge):
    """#1: the race check raises at the racy grid's end; forward catching it and running an atomic kernel
    was `ok`, where a GPU raises nothing and returns the racy kernel's lost updates (`mismatch`)."""
    result = judge(small_problem("12_mse_loss"), (HERE / "race_fallback.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "data race in kernel" in result.feedback


@pytest.mark.parametrize(
    ("candidate", "maker"),
    [("output_from_numpy.py", "torch.from_numpy"), ("output_from_asarray.py", "torch.asarray")],
)
def test_an_output_a_gpu_would_hold_in_host_memory_fails_whatever_made_it(judge, candidate, maker):
    """#2: an output made by ``torch.from_numpy`` (no torch function sees it) or ``torch.asarray`` (not
    among the factories red team 10 listed) was unmarked: `ok` on the CPU, a refused launch on a GPU."""
    result = judge(small_problem("vector_add"), (HERE / candidate).read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "cannot be accessed from Triton (cpu tensor?)" in result.feedback
    assert maker in result.feedback


def test_an_output_moved_by_type_as_is_on_the_device(judge):
    """#2's control: ``torch.empty(n).type_as(a)`` is on ``a``'s device on a GPU (`ok` there)."""
    result = judge(small_problem("vector_add"), (HERE / "output_type_as_input.py").read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


def test_host_tensors_knows_factories_by_what_they_are_given():
    import numpy as np
    import torch

    from tritongym.evaluate.placement import HostTensors

    given = torch.ones(4)
    host = HostTensors()
    with host:
        from torch import from_numpy  # as a candidate's import binds it

        made = [torch.normal(0.0, 1.0, (3,)), torch.hann_window(4), torch.empty_permuted((2, 3), (1, 0))]
        wrapped = torch.from_numpy(np.zeros(3, dtype=np.float32))
        buffered = torch.frombuffer(bytearray(8), dtype=torch.float32)
        derived = wrapped * 2
        placed = [torch.zeros(4, device=given.device), torch.ones(4).type_as(given), given[1:], torch.as_tensor(given)]
    assert torch.from_numpy is not from_numpy  # put back on leaving; the import's binding stays watched
    with host:
        bound = from_numpy(np.zeros(2, dtype=np.float32))
    unwatched = from_numpy(np.zeros(2, dtype=np.float32))
    assert all(host.made(t) for t in [*made, wrapped, buffered, derived, bound]), [host.made(t) for t in made]
    assert not any(host.made(t) for t in [*placed, unwatched]), [host.made(t) for t in placed]


def test_every_autotuning_config_is_judged(judge):
    """#3: the CPU's autotuner chose the first config every time, so a kernel right under that config
    only (a grid sized for it) was `ok`; a GPU chooses the fastest, here the wrong one. Each call now
    chooses the next config; the bundled solution, autotuned honestly, stays `ok`."""
    problem = small_problem("vector_add")
    source = (HERE / "autotuned_grid_for_one_block.py").read_text()
    result = judge(problem, source, config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    honest = source.replace("(triton.cdiv(n, 1024),)", 'lambda meta: (triton.cdiv(n, meta["BLOCK"]),)')
    assert judge(problem, honest, config()).verdict is Verdict.OK


@pytest.mark.parametrize(
    "allocation",
    [
        "torch.empty_permuted((1,), (0,), device=prediction.device, dtype=torch.float32)[0]",
        "torch.zeros(0, device=prediction.device, dtype=torch.float32).resize_(())",
    ],
)
def test_an_accumulator_allocated_unwritten_by_any_op_holds_the_poison(judge, allocation):
    """#4: red team 10 #5's accumulator never zeroed, made by an op the CPU's poison did not list
    (``empty_permuted``, or grown by ``resize_``): the memory was the host allocator's, often zeros
    (`ok` by chance); a GPU's holds the judge's poison (`mismatch`). Every ``empty`` op by its name,
    and what ``resize_`` adds, now hold the poison."""
    source = (Path(__file__).parent / "redteam10" / "accumulates_into_empty.py").read_text()
    made = "torch.empty((), device=prediction.device, dtype=torch.float32)"
    assert made in source
    result = judge(small_problem("12_mse_loss"), source.replace(made, allocation), config(trials=3))
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got nan" in result.feedback


def test_what_an_op_leaves_unwritten_holds_the_poison_and_what_it_kept_does_not():
    import torch

    from tritongym.evaluate.guards import POISON_BYTE, OpRecorder

    with OpRecorder(poison_empty=True) as recorder:
        permuted = torch.empty_permuted((2, 3), (1, 0))
        grown = torch.arange(4.0).resize_(8)
    assert bool(permuted.isnan().all())
    assert grown[:4].tolist() == [0.0, 1.0, 2.0, 3.0]  # what resize_ kept stays
    assert bool(grown[4:].view(torch.uint8).eq(POISON_BYTE).all())
    assert not recorder.compute  # allocation is glue


def test_an_honest_kernel_writing_a_registered_buffer_is_no_hack(judge):
    """#5: the hollow forward left the model's buffers unpoisoned, so a kernel's output buffer still
    held the last trial's answer for the same inputs: `hack_no_triton` for an honest kernel. Buffers
    a skipped launch would write are now poisoned (and put back); the NumPy forgery stays caught."""
    result = judge(small_problem("vector_add"), (HERE / "output_in_a_buffer.py").read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback
    forged = (HERE / "output_in_a_buffer.py").read_text()
    host_sum = "        return torch.from_numpy(a.cpu().numpy() + b.cpu().numpy())"
    forged = forged.replace("        return self.out.clone()", host_sum)
    assert judge(small_problem("vector_add"), forged, config()).verdict is Verdict.HACK_NO_TRITON


def test_a_host_tensor_inside_a_tuple_argument_fails_the_launch(judge):
    """#6: a tuple argument's tensors are pointers to a GPU's launcher too; the check read only the
    top-level arguments (`ok` on the CPU, a refused launch on a GPU)."""
    result = judge(small_problem("vector_add"), (HERE / "host_output_in_a_tuple.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "Pointer argument (at 0[2])" in result.feedback


def test_a_tensor_descriptor_over_host_memory_is_refused():
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from tritongym.evaluate.placement import HostTensors

    placed = torch.ones(16, 16)
    with HostTensors() as host:
        made = torch.zeros(16, 16)
    host.refuse("k", (TensorDescriptor.from_tensor(placed, [8, 8]), [placed, (placed,)]), {})
    with pytest.raises(ValueError, match=r"Pointer argument \(at 'out'\.base\)"):
        host.refuse("k", (placed,), {"out": TensorDescriptor.from_tensor(made, [8, 8])})
    with pytest.raises(ValueError, match=r"Pointer argument \(at 1\[1\]\[0\]\)"):
        host.refuse("k", (placed, [placed, (made,)]), {})
