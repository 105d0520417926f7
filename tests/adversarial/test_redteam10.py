"""The tenth red team's breaks (tests/adversarial/redteam10/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.races import ATOMIC, LOAD, STORE, DataRace, GridAccesses

HERE = Path(__file__).parent / "redteam10"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize("candidate", ["racy_reduction.py", "first_program_initialises.py"])
def test_programs_that_share_memory_without_atomics_race(judge, candidate):
    """#1: the interpreter runs a grid's programs one after another, so a read-modify-write of the
    output by every program (or program 0 zeroing what the others add to atomically) was right on
    the CPU (`ok`) and is wrong on a GPU, where the programs run at once. The launch now fails."""
    result = judge(small_problem("12_mse_loss"), (HERE / candidate).read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "data race in kernel" in result.feedback


@pytest.mark.parametrize("candidate", ["atomic_reduction.py", "lock_accumulation.py"])
def test_programs_that_combine_with_atomics_do_not_race(judge, candidate):
    """#1's controls: the same reduction with every program's partial added atomically, or added under
    a spin lock (the layer-norm tutorial's pattern), is `ok`."""
    result = judge(small_problem("12_mse_loss"), (HERE / candidate).read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


def test_a_lock_of_relaxed_atomics_orders_nothing(judge):
    """#1: the spin lock with ``sem="relaxed"`` atomics acquires and releases nothing on a GPU: the
    read-modify-writes under it race."""
    source = (HERE / "lock_accumulation.py").read_text()
    for call in ("tl.atomic_cas(lock_ptr, 0, 1", "tl.atomic_xchg(lock_ptr, 0"):
        source = source.replace(call + ")", call + ', sem="relaxed")')
    assert source.count('sem="relaxed"') == 2
    result = judge(small_problem("12_mse_loss"), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "data race in kernel" in result.feedback


def test_programs_that_store_the_same_values_do_not_race(judge):
    """#1's control: a grid larger than the kernel needs, whose redundant programs store the same
    values to the same elements, ends the same in any order (`ok` on a GPU too)."""
    result = judge(small_problem("vector_add"), (HERE / "redundant_programs.py").read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


def test_stores_of_one_value_by_two_programs_are_no_race_and_of_two_values_are():
    grid = GridAccesses("k")
    for program in range(3):
        values = np.array([1.5, 2.0], np.float32)
        grid.record(STORE, (program, 0, 0), (3, 1, 1), np.array([8, 16], np.uint64), None, values)
    grid.check()
    grid.record(STORE, (2, 0, 0), (3, 1, 1), np.array([8], np.uint64), None, np.array([2.5], np.float32))
    with pytest.raises(DataRace, match=r"program \(\d, 0, 0\) stores an element that program \(2, 0, 0\) stores"):
        grid.check()


def accesses(*records) -> GridAccesses:
    grid = GridAccesses("k")
    for kind, program, pointers, *mask in records:
        grid.record(kind, (program, 0, 0), (4, 1, 1), np.array(pointers, dtype=np.uint64), *mask)
    return grid


@pytest.mark.parametrize(
    "records",
    [
        [(STORE, 0, [8]), (STORE, 1, [8])],
        [(LOAD, 0, [8, 16]), (STORE, 3, [16])],
        [(STORE, 2, [8]), (LOAD, 1, [8])],
        [(STORE, 0, [8]), (ATOMIC, 1, [8])],
        [(ATOMIC, 0, [8]), (LOAD, 1, [8])],
        # an element also touched plainly orders nothing (program 0 zeroes what the others add to)
        [(STORE, 0, [8]), (ATOMIC, 0, [8]), (ATOMIC, 1, [8]), (LOAD, 1, [8])],
        # the later program takes the lock only after its access
        [(ATOMIC, 0, [100]), (STORE, 0, [8]), (ATOMIC, 0, [100]), (LOAD, 1, [8]), (ATOMIC, 1, [100])],
        # the earlier program gives the lock back before its access
        [(ATOMIC, 0, [100]), (ATOMIC, 0, [100]), (STORE, 0, [8]), (ATOMIC, 1, [100]), (LOAD, 1, [8])],
    ],
)
def test_an_element_two_programs_touch_without_atomics_is_a_race(records):
    with pytest.raises(DataRace, match="data race in kernel k"):
        accesses(*records).check()


@pytest.mark.parametrize(
    "records",
    [
        [(LOAD, 0, [8]), (STORE, 0, [8]), (LOAD, 0, [8])],  # one program's own read-modify-write
        [(LOAD, 0, [8]), (LOAD, 1, [8]), (LOAD, 2, [8])],  # shared reads
        [(ATOMIC, 0, [8]), (ATOMIC, 1, [8])],  # atomics among themselves
        [(STORE, 0, [8, 16]), (STORE, 1, [24, 32])],  # disjoint tiles
        [(STORE, 0, [8, 16], np.array([True, False])), (STORE, 1, [16])],  # a masked-off lane is no access
        # a lock and a counter order only where a program observes them: test_redteam12.py
    ],
)
def test_programs_that_share_no_element_unsafely_do_not_race(records):
    accesses(*records).check()


@pytest.mark.parametrize(
    ("precision", "verdict"), [(None, Verdict.PRECISION), ('"tf32"', Verdict.PRECISION), ('"ieee"', Verdict.OK)]
)
def test_a_float32_dot_in_tf32_is_judged_as_a_gpu_computes_it(judge, precision, verdict):
    """#2: a float32 ``tl.dot`` at its default input precision multiplies in TF32 on a GPU (Ampere and
    later), far less accurately than PyTorch: `precision` there. The interpreter multiplied the full
    float32 values, so the CPU said `ok`; it now rounds the operands to TF32 first."""
    source = (HERE / "default_tf32_dot.py").read_text()
    if precision is not None:
        source = source.replace("tl.dot(x, w)", f"tl.dot(x, w, input_precision={precision})")
    result = judge(small_problem("06_linear_relu"), source, config())
    assert result.verdict is verdict, result.feedback


def test_tf32_rounding_keeps_ten_mantissa_bits():
    from tritongym.evaluate.tf32 import round_to_tf32

    values = np.array([1 + 2**-10, 1 + 2**-11, 1 + 2**-11 + 2**-12, 1 + 3 * 2**-11, np.inf, -np.inf], np.float32)
    expected = np.array([1 + 2**-10, 1.0, 1 + 2**-10, 1 + 2**-9, np.inf, -np.inf], np.float32)
    assert np.array_equal(round_to_tf32(values), expected)  # to nearest, ties to even
    assert np.isnan(round_to_tf32(np.array([np.nan], np.float32))).all()


HOST_OUTPUT = "torch.empty(n, dtype=a.dtype)  # no device=: the host's memory on every machine"


@pytest.mark.parametrize(
    ("made", "verdict"),
    [
        (None, Verdict.RUNTIME_ERROR),  # torch.empty(n, dtype=...) without a device
        ("torch.zeros(n).to(a.dtype)", Verdict.RUNTIME_ERROR),  # made on the host, then only cast
        ("torch.empty(n, dtype=a.dtype, device=a.device)", Verdict.OK),
        ("torch.empty(n, dtype=a.dtype).to(a.device)", Verdict.OK),  # moved where the inputs are
        ("torch.empty_like(a)", Verdict.OK),
    ],
)
def test_a_kernel_argument_a_gpu_would_hold_in_host_memory_fails_the_launch(judge, made, verdict):
    """#3: on a GPU a tensor forward makes without ``device=`` is in host memory and Triton refuses to
    launch with it (runtime_error); on the CPU every tensor is on the host, so it was `ok`."""
    source = (HERE / "output_on_the_host.py").read_text()
    if made is not None:
        source = source.replace(HOST_OUTPUT, made)
    result = judge(small_problem("vector_add"), source, config())
    assert result.verdict is verdict, result.feedback
    if verdict is Verdict.RUNTIME_ERROR:
        assert "cannot be accessed from Triton (cpu tensor?)" in result.feedback


def test_a_module_global_a_gpu_would_hold_in_host_memory_fails_the_launch(judge):
    """#3b: the same for a tensor the candidate's module makes at import."""
    result = judge(small_problem("vector_add"), (HERE / "table_made_at_import.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "made by torch.ones without device=" in result.feedback


def test_what_forward_makes_on_the_host_is_followed_through_what_it_derives():
    import torch

    from tritongym.evaluate.placement import HostTensors

    inputs = torch.ones(4)
    with HostTensors() as host:
        made = torch.arange(4)
        derived = made.float().contiguous()
        view = made[1:]
        mixed = inputs + derived  # the input's side: placed
        placed = torch.zeros(4).to(inputs.device)
        with torch.device("cpu"):
            in_context = torch.empty(4)
    assert host.made(made) and host.made(derived) and host.made(view)
    assert not host.made(inputs) and not host.made(mixed) and not host.made(placed) and not host.made(in_context)
    with pytest.raises(ValueError, match=r"Pointer argument \(at 1\)"):
        host.refuse("k", (inputs, derived), {})
    host.refuse("k", (inputs, mixed, 3), {"n": 4})


def test_a_kernel_that_ignores_its_inputs_layout_is_judged_on_the_layout_the_problem_gives(judge):
    """#4: 10_transposed_broadcast_add's input is a column-major view; the protocol sent every tensor
    as a contiguous copy (its shape, not its strides), so on the CPU a kernel that reads it as
    row-major read the right elements (`ok`). A dense layout now travels with the tensor."""
    problem = small_problem("10_transposed_broadcast_add")
    result = judge(problem, (HERE / "ignores_input_strides.py").read_text(), config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert judge(problem, problem.solution, config()).verdict is Verdict.OK


def test_a_dense_layout_travels_and_any_other_is_sent_contiguous():
    import torch

    from tritongym.evaluate.judge import protocol as p

    blobs: list = []
    transposed, permuted = torch.randn(5, 3).t(), torch.randn(2, 3, 4).permute(2, 0, 1)
    sliced, expanded = torch.randn(4, 6)[:, 1:4], torch.randn(3).expand(2, 3)
    tree = p.encode_tree([transposed, permuted, sliced, expanded, torch.randn(4, 6)[1:]], blobs)
    assert [len(node["T"]) for node in tree["L"]] == [4, 4, 3, 3, 3]  # strides only where dense and not contiguous
    payload = memoryview(b"".join(bytes(b) for b in blobs))
    got = p._Decoder(payload).value(tree)
    assert got[0].stride() == transposed.stride() and got[1].stride() == permuted.stride()
    for g, e in zip(got, [transposed, permuted, sliced, expanded], strict=False):
        assert torch.equal(g, e)
    for strides in ([1, 1], [2, 1], [3, -1], [3, 1.0]):  # overlapping, gapped or not integers: refused
        with pytest.raises(p.ProtocolError, match="strides"):
            p._Decoder(memoryview(bytes(24))).value({"T": [0, "float32", [2, 3], strides]})


def test_a_tensor_without_a_plain_storage_is_never_marked_nor_refused():
    """#3's watch must not break forward on layouts that have no plain storage (a sparse tensor)."""
    import torch

    from tritongym.evaluate.placement import HostTensors

    with HostTensors() as host:
        sparse = torch.zeros(3, 3).to_sparse()
        dense = sparse.to_dense() + 1
    assert not host.made(sparse)
    host.refuse("k", (sparse,), {})
    assert dense.sum() == 9


# compaction while the grid runs (a lock observed): test_redteam12.py


def test_an_accumulator_never_zeroed_is_wrong_on_every_evaluation(judge):
    """#5: an output made by ``torch.empty`` and only added to. A GPU's free memory holds the judge's
    poison before every trial (NaN); a fresh small host allocation is often zeros, so on the CPU the
    verdict was a coin flip (`ok` on 2 of 3 evaluations). What forward allocates with ``empty`` on the
    CPU now holds the poison too."""
    source = (HERE / "accumulates_into_empty.py").read_text()
    result = judge(small_problem("12_mse_loss"), source, config(trials=5))
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got nan" in result.feedback


def test_what_the_empty_family_returns_holds_the_poison_on_the_cpu():
    import torch

    from tritongym.evaluate.guards import POISON_BYTE, OpRecorder

    x = torch.ones(3, 4)
    with OpRecorder(poison_empty=True) as recorder:
        made = [torch.empty(5), torch.empty_like(x), x.new_empty(2, 2), torch.empty_strided((2, 3), (1, 2))]
        zeros, ones = torch.zeros(3), torch.ones(3, dtype=torch.int32)
    for t in made:
        assert bool(t.view(torch.uint8).eq(POISON_BYTE).all()) if t.is_contiguous() else bool(t.isnan().all())
    assert zeros.eq(0).all() and ones.eq(1).all()  # what is written on allocation stays as written
    assert not recorder.compute  # allocation and fills are glue


def test_a_kernel_that_reads_a_slice_as_contiguous_is_judged_on_the_slice(judge):
    """#4b: a slice with gaps travelled as a contiguous copy, so a kernel that ignored its strides read
    the right elements on the CPU. The judge's inputs now travel in their own layout (the storage they
    cover), as a GPU's trial slots keep it; the same kernel on a contiguous copy of it is right."""
    from tritongym.problems import Problem

    problem = Problem(name="sliced_input", source=(HERE / "sliced_input_problem.py").read_text())
    source = (HERE / "ignores_a_slices_strides.py").read_text()
    assert judge(problem, source, config()).verdict is Verdict.MISMATCH
    honest = source.replace("double_kernel[(", "x = x.contiguous()\n        double_kernel[(")
    assert judge(problem, honest, config()).verdict is Verdict.OK


def test_any_layout_travels_only_from_the_judge():
    import torch

    from tritongym.evaluate.judge import protocol as p

    sliced, expanded = torch.randn(4, 6)[:, 1:4], torch.randn(3).expand(2, 3)
    for value in (sliced, expanded):
        got = p._build("call", *_call_frame(p, value), (p.Call,)).args[0]
        assert got.stride() == value.stride() and torch.equal(got, value)
        with pytest.raises(p.ProtocolError, match="layout"):  # a runner's answer may not claim one
            p._build("output", *_output_frame(p, value), (p.Output,))
    with pytest.raises(p.ProtocolError, match="layout"):  # an extent that is not the layout's
        p._Decoder(memoryview(bytes(4 * 9)), any_layout=True).value({"T": [0, "float32", [2, 3], [4, 1], 9]})


def _call_frame(p, value):
    blobs: list = []
    body = {"args": p.encode_tree([value], blobs, any_layout=True), "poison": False, "in_slots": False,
            "out_slots": False, "answers": []}  # fmt: skip
    return body, memoryview(b"".join(bytes(b) for b in blobs))


def _output_frame(p, value):
    blobs: list = []
    tree = p.encode_tree(value, blobs, any_layout=True)
    body = {f.name: None for f in p.fields(p.Output)} | {
        "value": tree, "out_slots": False, "launches": 1, "off_stream": 0, "off_stream_ops": [], "compute": {},
        "tampering": [], "threads": [], "alias": "", "strides": [],
    }  # fmt: skip
    return body, memoryview(b"".join(bytes(b) for b in blobs))


def test_a_relaxed_atomic_is_no_synchronisation():
    """A counter updated with relaxed atomics orders nothing: the last program's reads race."""
    grid = GridAccesses("k")
    for program, pointers in ((0, [8]), (1, [16])):
        grid.record(STORE, (program, 0, 0), (2, 1, 1), np.array(pointers, np.uint64), None, np.ones(1, np.float32))
        grid.record(ATOMIC, (program, 0, 0), (2, 1, 1), np.array([100], np.uint64), ordering=False)
    grid.record(LOAD, (1, 0, 0), (2, 1, 1), np.array([8, 16], np.uint64))
    with pytest.raises(DataRace):
        grid.check()
