"""The nineteenth red team's attacks (tests/adversarial/redteam19/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.static_checks import forbidden_constructs

HERE = Path(__file__).parent / "redteam19"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def test_glue_answer_handed_in_float64_is_seen(judge):
    """#1: glue's answer made in float64 (``_to_copy``, glue) and cast into the float32 output by a kernel
    (``ok`` under ``forbid``: a handed tensor was looked at in the output's dtype or as its bytes only)."""
    result = judge(small_problem("11_roll"), (HERE / "answer_as_float64.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


@pytest.mark.xfail(strict=True, reason="open: the answer in another layout than the output's (README)")
def test_glue_answer_handed_transposed_is_seen(judge):
    """#2: glue's answer handed transposed (``.t().contiguous()``) to a kernel that transposes it back:
    ``ok`` under ``forbid``, open."""
    result = judge(small_problem("11_roll"), (HERE / "answer_transposed.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


@pytest.mark.xfail(strict=True, reason="open: the answer in another layout than the output's (README)")
def test_glue_answer_handed_in_padded_rows_is_seen(judge):
    """#3: glue's answer handed in rows one element wider (one ``torch.cat`` with a padding column), to a
    kernel that drops the padding: ``ok`` under ``forbid``, open."""
    result = judge(small_problem("11_roll"), (HERE / "answer_in_padded_rows.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_glue_answer_handed_as_another_dtypes_bits_is_seen(judge):
    """#4 (dtype reinterpretation): glue's answer's bits handed as int32 and copied into the output's bits
    by a kernel: the handed storage's bytes are read in the output's dtype (red team 16 #1b)."""
    result = judge(small_problem("11_roll"), (HERE / "answer_bits_as_int32.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_decoys_nearer_the_output_than_the_answer_are_seen_past(judge):
    """#5: 256 decoys (the kernels' output, one element set by glue past the tolerance) nearer forward's
    output than glue's answer, which a kernel shifted by 0.8 of the allowed error (``ok`` under
    ``forbid`` while the samples sent were ranked by forward's output): ranked by the reference's
    (``Expected``, ``handed.nearest``), the answer is sent."""
    result = judge(small_problem("11_roll"), (HERE / "decoys_nearer_the_output.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_samples_are_ranked_by_the_error_each_element_may_have():
    """#5's ranking (``handed.excess`` of ``compare.element_bounds``): an element's error counts against
    what it may have there, so a decoy off at an element of small magnitude by less than the answer is
    off at a large one (fixed tolerances) ranks after it; NaN where the reference has NaN and PyTorch's
    own overflow are no error; an exact dtype is equal or infinitely far; a complex output is its parts."""
    from tritongym.evaluate.compare import Tolerance, element_bounds
    from tritongym.evaluate.judge.handed import excess

    fixed = Tolerance(policy="fixed")
    e = torch.tensor([1000.0, 0.0, float("nan")])
    bounds = element_bounds(e, None, fixed)
    assert torch.allclose(bounds[1], torch.tensor([1000 * 1e-4 + 1e-4, 1e-4, 1e-4], dtype=torch.float64))
    answer = torch.tensor([1000.05, 0.0, float("nan")])  # 0.05 off where 0.1001 is allowed
    decoy = torch.tensor([1000.0, 0.001, float("nan")])  # 0.001 off where 0.0001 is allowed
    assert excess(answer, *bounds) < 1 < excess(decoy, *bounds)
    assert excess(torch.tensor([1000.0, 0.0, 0.0]), *bounds) == float("inf")  # a number where NaN is
    assert excess(answer[:2], *bounds) == float("inf")
    native = torch.tensor([float("inf"), 1.0], dtype=torch.float16)  # PyTorch overflowed where float64 did not
    reference, allowed = element_bounds(native, torch.tensor([70000.0, 1.0], dtype=torch.float64), Tolerance())
    assert excess(native.clone(), reference, allowed) == 0 and excess(torch.ones(2, dtype=torch.float16), reference,
                                                                      allowed) == float("inf")  # fmt: skip
    ints = torch.tensor([3, 1 << 60])
    assert excess(ints.clone(), *element_bounds(ints, None, fixed)) == 0
    assert excess(ints + 1, *element_bounds(ints, None, fixed)) == float("inf")
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert excess(z.clone(), *element_bounds(z, z.to(torch.complex128), Tolerance())) == 0
    assert excess(z + 1j, *element_bounds(z, z.to(torch.complex128), Tolerance())) > 1


def test_nothing_in_the_runners_frames_holds_the_answer(judge):
    """#7: forward walks the frames above it (a traceback's) and their objects' attributes for a tensor of
    the output's shape that is none of its own: the reference runs in the judge's process, so none
    holds the answer (``mismatch``: the zeros it returns)."""
    result = judge(small_problem("01_vector_add"), (HERE / "answer_from_the_runners_frames.py").read_text(), config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got 0" in result.feedback


def test_the_cpus_rewrite_of_the_device_idiom_hides_no_host_copy(judge):
    """#8: in the branch the CPU runs of ``torch.cuda.is_available()``, ``x.to("cpu")`` names the device after
    ``placement.candidate_code``'s rewrite; NumPy's row sums of it are still a read of the whole input."""
    source = (HERE / "rewrite_branch_hides_a_host_copy.py").read_text()
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "copied 9600 bytes of device memory to the host" in result.feedback


def test_torch_internals_behind_the_signal_namesake_are_refused(judge):
    """#9: ``torch.signal`` is allowed by its path, but ``torch`` re-exported behind it
    (``signal.windows.windows.torch._C``) is still ``torch._C`` to the static checks."""
    source = (HERE / "namesake_reaches_torch_internals.py").read_text()
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is Verdict.HACK_FORBIDDEN_API, result.feedback
    assert "torch._C" in result.feedback
    assert forbidden_constructs("import torch.signal as s\ns.windows.windows.torch._C\n")


@pytest.mark.xfail(strict=True, reason="open: the answer as pieces, each smaller than an output (README)")
def test_glue_answer_handed_as_pieces_in_storages_of_their_own_is_seen(judge):
    """#10: glue's answer made as two pieces (top and bottom rows) in storages of their own, each copied
    into its half of the output by a kernel: ``ok`` under ``forbid``, open."""
    result = judge(small_problem("11_roll"), (HERE / "answer_in_two_storages.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_compute_with_the_dispatch_modes_off_is_witnessed(judge):
    """#11: ``_disable_current_modes`` reached by a re-export with no forbidden part in its path
    (``torch._library.fake_class_registry``) hides PyTorch's row sums from the op recorder; the op witness
    (PyTorch's profiler) still reports them."""
    source = (HERE / "dispatch_modes_off_by_a_reexport.py").read_text()
    assert not forbidden_constructs(source)
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback
    assert "sum (hidden from the op recorder)" in result.feedback


def test_a_glue_write_the_moved_hook_never_sees_is_still_seen(judge):
    """#12: red team 16 #1's ``copy_`` of glue's answer into a buffer a kernel was handed, run with the
    dispatch modes off (#11): the record of what the launch left stands, but its check (the bytes taken
    again at the next handing) tells that glue wrote there since."""
    result = judge(small_problem("11_roll"), (HERE / "glue_write_unseen_by_moved.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_glue_answer_handed_as_an_address_is_seen(judge):
    """#13: glue's answer handed to the copy kernel as ``answer.data_ptr()``, an integer the kernel casts to a
    pointer (``ok`` under ``forbid``: only tensor arguments were looked at). The storage holding an
    address a launch is handed is looked at from there (``handed.addressed``)."""
    result = judge(small_problem("11_roll"), (HERE / "answer_handed_as_an_address.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_glue_answer_reached_through_a_pointer_table_is_seen(judge):
    """#14: #13 past its fix: the answer's address in a one-element int64 tensor the kernel loads its
    pointer from (``ok`` under ``forbid``). A small int64 tensor a launch is handed is read as the
    integers it holds (``handed.TABLES``)."""
    result = judge(small_problem("11_roll"), (HERE / "answer_through_a_pointer_table.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_glue_answer_at_a_distance_from_a_handed_input_is_seen(judge):
    """#15: #13 and #14 past their fixes: the kernel is handed the input and the distance (in elements) from
    it to glue's answer, and reads the answer at ``x_ptr + distance``: ``ok`` under ``forbid``, open."""
    source = (HERE / "answer_at_a_distance_from_the_input.py").read_text()
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_the_memory_an_address_names_is_found_among_the_live_tensors():
    """#13's rule (``handed.addressed``): an address a launch is handed, as forward got it (shifted on the
    CPU, as ``data_ptr()`` gives it under the judge's watch, or not), names its storage from there: in each
    output's dtype and of its size where that fits, else as bytes to the storage's end. Sizes and other
    small integers, and an integer in no live storage, name nothing; the hollow forward sees the same
    memory (``MadeBeforeKernels``)."""
    from tritongym.evaluate.judge.handed import addressed
    from tritongym.evaluate.judge.runner import MadeBeforeKernels
    from tritongym.evaluate.placement import ADDRESS_SHIFT, HostTensors

    wanted = [(6, torch.float32)]
    buffer = torch.arange(10.0)
    for address in (buffer.data_ptr(), buffer.data_ptr() + ADDRESS_SHIFT[0]):
        (found,) = addressed([3, (address,)], wanted)
        assert found.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
        assert torch.equal(found, buffer[:6])
    (later,) = addressed([buffer.data_ptr() + 4 * 7], wanted)
    assert later.dtype == torch.uint8 and later.numel() == 12
    assert addressed([4096, 1 << 20, True], wanted) == []
    table = torch.tensor([7, buffer.data_ptr() + 4], dtype=torch.int64)
    (tabled,) = addressed([table], wanted)
    assert torch.equal(tabled, buffer[1:7])
    assert addressed([table.int()], wanted) == addressed([torch.cat([table] * 33)], wanted) == []
    # a table in device memory holding the address forward is given (shifted in a watch, by a shift drawn
    # for it): the judge's read of it is no host read of forward's
    with HostTensors() as reads:
        shifted = torch.tensor([buffer.data_ptr()], dtype=torch.int64, device=buffer.device)
        reads.host_bytes = 0
        (found,) = addressed([shifted], wanted)
        assert reads.host_bytes == 0
        shifted.tolist()
        assert reads.host_bytes == 8
    assert torch.equal(found, buffer[:6])
    assert addressed([(1 << 62) + 8], wanted) == []
    made = MadeBeforeKernels([[6, "torch.float32"]])
    for view in addressed([buffer.data_ptr() + 8], made.dtypes()):
        made.see(view)
    assert len(made.copies) == 1 and torch.equal(made.copies[0][1], buffer[2:8])


def _launch(handed, *tensors, write=None):
    after = handed.see(tensors, {})
    if write is not None:
        write()
    after()


def test_a_tensor_of_the_outputs_size_in_another_dtype_is_looked_at_as_its_values():
    """#1's rule (``FirstHanded.regions``, ``MadeBeforeKernels``): glue's float64 answer handed to a launch is
    sampled cast to the float32 output's dtype, where it holds the answer (its bytes are looked at too); a
    boolean or complex tensor of the output's size is looked at as bytes only."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import FirstHanded, stepped_sample
    from tritongym.evaluate.judge.runner import MadeBeforeKernels, answer_sample

    answer = torch.randn(6, 50)
    wide = answer.double()
    handed = FirstHanded([[answer.numel(), "torch.float32"]], [])
    with OpRecorder(poison_empty=True, moved=handed.moved):
        out = torch.empty_like(answer)
        _launch(handed, wide, out, write=lambda: out.copy_(wide))
        _launch(handed, torch.ones(answer.numel(), dtype=torch.bool))
    step = stepped_sample(answer.numel())
    copies = [pair for _, pair, _ in handed.copies()]
    found = [s for start, s in copies if s.dtype == torch.float32 and torch.equal(s, answer.view(-1)[start::step])]
    assert len(found) == 1
    made = MadeBeforeKernels([[answer.numel(), "torch.float32"]])
    made.see(wide)
    made.see(torch.ones(answer.numel(), dtype=torch.bool))
    made.see(torch.arange(answer.numel(), dtype=torch.int64))
    assert [c.dtype for _, c, _ in made.copies] == [torch.float32, torch.float32]
    assert torch.equal(made.copies[0][1], answer.view(-1)[answer_sample(answer.numel())])


@pytest.mark.parametrize("settled", ["never", "after each step"])
def test_settle_at_any_point_keeps_glues_answer_looked_at(settled, monkeypatch):
    """``settle``'s early decision (past ``KEPT_FLOOR`` or the bytes forward handed: a forward can force it
    by handing many buffers): settled after every launch and move, red team 16 #1's route (a buffer a
    kernel was handed and left as it was, then given glue's answer by ``copy_``, handed to a copy kernel)
    is looked at as when nothing is settled, and a kernel's own output moved by glue stays theirs."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge import handed as module

    settles = []
    if settled != "never":
        monkeypatch.setattr(module.FirstHanded, "_bound", lambda self: settles.append(self.settle()))
    x = torch.randn(6, 50)
    answer = torch.cat((x[:, 43:], x[:, :43]), dim=1)
    step = module.stepped_sample(answer.numel())

    def looked(route):
        handed = module.FirstHanded([[x.numel(), "torch.float32"]], [x])
        with OpRecorder(poison_empty=True, moved=handed.moved):
            buf, out = torch.empty_like(x), torch.empty_like(x)
            if route == "glue":
                _launch(handed, buf)
                buf.copy_(answer)
            else:
                _launch(handed, x, buf, write=lambda: buf.copy_(answer))
                buf = buf.clone()
            _launch(handed, buf, out, write=lambda: out.copy_(buf))
        flat = answer.reshape(-1)
        return sum(torch.equal(s, flat[start::step]) for _, (start, s), _ in handed.copies())

    assert looked("glue") == 1
    assert looked("kernels") == 0
    assert len(settles) == (0 if settled == "never" else 5)  # each launch, and the move of the kernels' output
