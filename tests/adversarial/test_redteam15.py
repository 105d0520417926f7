"""The fifteenth red team's breaks (tests/adversarial/redteam15/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.utils.dlpack
import triton
import triton.language as tl

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, frontend, placement
from tritongym.evaluate.compare import Tolerance
from tritongym.evaluate.guards import _byte_range
from tritongym.evaluate.placement import HostTensors, OwnCode

HERE = Path(__file__).parent / "redteam15"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize("route", ["global", "constexpr"])
def test_a_function_forged_as_tritons_that_a_kernel_calls_is_host_code(judge, route):
    """#3: a plain function a kernel calls (through a global, or handed as a ``tl.constexpr``) must be a
    library's, told by its code's file name and its globals: a code object renamed after Triton's file
    in a function built over a Triton module's namespace passed, and under the interpreter computed the
    softmax with NumPy (``ok`` under ``forbid``). It is told now by its code object's identity."""
    source = (HERE / "forged_library_function.py").read_text().replace('ROUTE = "global"', f'ROUTE = "{route}"')
    result = judge(small_problem("04_softmax"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "host_softmax (a function that is not device code)" in result.feedback


def _candidate_function(x):
    return x


def test_a_library_function_is_one_its_modules_hold_not_one_named_after_them():
    """#3's rule (``frontend.library_function``): Triton's own function is a library's; the same code
    renamed or rebuilt over Triton's globals is not, nor is Triton's own code object rebuilt around a
    closure cell or a default of the candidate's."""
    wrapper = tl.program_id  # a builtin: a wrapper holding the function it wraps in its closure
    assert isinstance(wrapper, types.FunctionType) and wrapper.__closure__
    assert frontend.library_function(wrapper)
    renamed = _candidate_function.__code__.replace(co_filename=triton.jit.__code__.co_filename)
    assert not frontend.library_function(type(wrapper)(renamed, triton.jit.__globals__, "forged"))
    cells = tuple(types.CellType(_candidate_function) for _ in wrapper.__closure__)
    around = type(wrapper)(wrapper.__code__, wrapper.__globals__, "around", wrapper.__defaults__, cells)
    assert not frontend.library_function(around)
    jit = triton.runtime.jit.jit  # a function of Triton's with a default
    assert frontend.library_function(jit) and jit.__defaults__
    defaulted = type(jit)(jit.__code__, jit.__globals__, "jit", (_candidate_function,))
    defaulted.__kwdefaults__ = jit.__kwdefaults__
    assert not frontend.library_function(defaulted)
    assert not frontend.library_function(_candidate_function)


def test_a_library_module_imported_later_is_known_by_what_its_file_compiles_to(tmp_path, monkeypatch):
    """#3: a library module first imported after the runner's last look (Inductor's runtime helpers,
    imported by the candidate) holds library functions: its code is checked against its file, so a
    renamed code object of the candidate's is not among them."""
    (tmp_path / "late_library.py").write_text("def helper(x, scale=2):\n    return x * scale\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = OwnCode((str(tmp_path) + "/",))
    import late_library

    try:
        assert code.function(late_library.helper)
        forged = _candidate_function.__code__.replace(co_filename=late_library.__file__)
        assert not code.function(types.FunctionType(forged, vars(late_library), "forged"))
        assert not code.function(types.FunctionType(late_library.helper.__code__, {"__name__": "late_library"}))
    finally:
        sys.modules.pop("late_library", None)


ADDRESS_ROUTES = ["data_ptr", "tiny_storage", "reinterpret"]


@pytest.mark.parametrize("route", ADDRESS_ROUTES)
def test_an_input_read_through_its_address_faults_as_on_a_gpu(judge, route):
    """#2: NumPy over an input's address (``data_ptr()``, or its storage's: a tiny tensor's storage
    gives the distance; a kernel's pointer cast to an integer) read the input on the host with no torch
    function, and the row sums passed as ``ok`` under ``forbid``. On a GPU the address is device
    memory, which the host cannot read. Forward's code is now given device addresses shifted out of the
    host's range: the read faults, as there."""
    source = (HERE / "host_view_from_data_ptr.py").read_text().replace('ROUTE = "data_ptr"', f'ROUTE = "{route}"')
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.CRASH, result.feedback
    assert "SIGSEGV" in result.feedback


def test_numpy_over_a_dlpack_capsule_of_an_input_is_refused_as_on_a_gpu(judge):
    """#2: ``np.from_dlpack`` over an object handing it ``torch.utils.dlpack.to_dlpack(x)`` (a C function:
    no torch function mode sees it) viewed the input: ``ok`` under ``forbid``. A capsule of device
    memory now goes to PyTorch's own ``from_dlpack`` alone, as a GPU's does."""
    source = (HERE / "host_view_from_data_ptr.py").read_text().replace('ROUTE = "data_ptr"', 'ROUTE = "dlpack"')
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback


def test_pytorchs_own_dlpack_round_trip_is_device_memory():
    """#2's honest side: ``torch.from_dlpack(torch.utils.dlpack.to_dlpack(x))`` is an alias of device
    memory, on a GPU too: placed, not host memory."""
    x = torch.arange(4.0)
    host = HostTensors()
    with host:
        y = torch.from_dlpack(torch.utils.dlpack.to_dlpack(x))
        assert host.made(y) == "" and y.data_ptr() == x.data_ptr()
        assert type(torch.to_dlpack(torch.empty(3))).__name__ == "PyCapsule"  # host memory's: as it is
        with pytest.raises(BufferError, match="device memory"):
            np.from_dlpack(torch.utils.dlpack.to_dlpack(x))


def test_a_table_of_device_addresses_and_alignment_checks_still_work(judge):
    """#2's honest side: forward checks alignment and aliasing with ``data_ptr()`` and hands its kernel
    a table of addresses it loads pointers from (Triton's grouped GEMM): ``ok``."""
    result = judge(small_problem("01_vector_add"), (HERE / "pointer_table.py").read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


def test_forward_sees_device_addresses_shifted_and_host_memory_as_it_is():
    """#2's rule (``placement.ADDRESS_SHIFT``): while a ``HostTensors`` watches, forward's code is given
    a device tensor's address (and its storage's) shifted past the host's range, alignment and
    distances kept; host memory's and the judge's own requests are the addresses themselves."""
    x = torch.arange(64, dtype=torch.float32)
    real = x.data_ptr()
    host = HostTensors()
    with host:
        shifted = x.data_ptr()
        assert shifted >= 1 << 47 and shifted != real and shifted % 4096 == real % 4096
        assert x[8:].data_ptr() - shifted == 32
        assert x.untyped_storage().data_ptr() == shifted
        assert host.made(x) == ""  # the judge's own look (placement._address) sees the real address
        assert triton.reinterpret(x, tl.float32).data_ptr() == shifted  # Triton's code asked by forward's
        with torch.device("cpu"):  # a device context's frame passes the call on: the caller is past it
            assert x.data_ptr() == shifted
            assert _byte_range(x)[0] == real  # the judge's own code (Triton's interpreter's launch too)
        made = torch.empty(4)  # host memory on a GPU: its address is the host's
        assert made.data_ptr() == made.untyped_storage().data_ptr() < 1 << 47
        assert shifted - real == placement.ADDRESS_SHIFT[0]
    assert x.data_ptr() == real
    assert "data_ptr" not in vars(torch.UntypedStorage)


def test_an_address_a_kernel_casts_is_the_one_forward_was_given():
    """#2's casts (``placement.builder_points``): under the interpreter a pointer cast to an integer is
    the shifted address, and a shifted address cast back to a pointer is the memory it names."""
    points = {name: wrap for _, name, wrap in placement.builder_points()}
    assert set(points) == {"create_ptr_to_int", "create_int_to_ptr"}

    class Handle:
        def __init__(self, data, dtype=None):
            self.data, self.dtype = data, dtype

    real = np.array([4096, 0], dtype=np.int64)
    as_int = points["create_ptr_to_int"](lambda builder, src, ty: Handle(src.data.astype(np.int64)))
    shifted = as_int(None, Handle(real.astype(np.uint64)), None).data
    assert list(shifted) == [4096 + placement.ADDRESS_SHIFT[0], 0]
    as_ptr = points["create_int_to_ptr"](lambda builder, src, ty: Handle(src.data.astype(np.uint64)))
    assert list(as_ptr(None, Handle(shifted), None).data) == [4096, 0]


def test_an_answer_made_by_glue_and_handed_over_past_the_hollow_forward_is_refused(judge):
    """#5: 11_roll's answer made by PyTorch glue (slices, ``torch.cat``) and copied by a kernel, handed
    over only where a probe kernel ran (the hollow forward, which alone looked at what launches are
    handed, skips every launch): ``ok`` under ``forbid``. Every trial now samples what forward hands
    its launches, as it is when handed to one where no kernel wrote it (``handed.FirstHanded``)."""
    source = (HERE / "glue_answer_past_the_hollow_forward.py").read_text()
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output when handed to one, before it ran, where no kernel had" in result.feedback


@pytest.mark.parametrize("route", ["input", "weight"])
def test_an_answer_parked_in_an_inputs_or_a_weights_storage_is_looked_at_too(judge, route):
    """#5d: the glue answer written into the input's own storage (or a view of a parameter of the
    model's), handed to the copy kernel, and put back after: ``ok`` under ``forbid`` (both answer
    checks passed over forward's inputs and weights). The trials' sample, and the hollow forward's,
    look at them as handed too; an output an input or a weight of the reference's holds is not
    looked for."""
    source = (HERE / "answer_parked_in_an_input.py").read_text().replace('ROUTE = "input"', f'ROUTE = "{route}"')
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_a_kernel_copying_what_an_earlier_kernel_wrote_is_honest(judge):
    """#5's honest side: the answer a first kernel wrote into a scratch buffer, copied by a second."""
    result = judge(small_problem("11_roll"), (HERE / "two_kernel_pipeline.py").read_text(), config())
    assert result.verdict is Verdict.OK, result.feedback


def test_what_a_trial_samples_of_the_tensors_its_launches_are_handed():
    """#5's sample (``handed.FirstHanded``): of an output's size and dtype, as it is when handed, unless
    what a launch left there (red team 16: not looked at again while it is what the launch left), none
    of one value, every ``stepped_sample``-th element from a start drawn when it is taken; the judge
    compares those elements of the output."""
    from tritongym.evaluate.judge.handed import HANDED_SAMPLE, FirstHanded, stepped_sample
    from tritongym.evaluate.judge.judge import answer_made_before_kernels

    handed = FirstHanded([[6, "torch.float32"]])
    answer, later = torch.tensor([3.0, 1, 4, 1, 5, 9]), torch.rand(6)
    after = handed.see((answer, torch.zeros(6)), {})
    answer += 1  # written by the launch: the sample is what it held when first handed
    after()
    handed.see((answer,), {"out": later})()  # what the first launch left in ``answer`` is the kernels' work
    copies = [pair for _, pair, _ in handed.copies()]
    assert [start for start, _ in copies] == [0, 0]
    assert torch.equal(copies[0][1], answer - 1) and torch.equal(copies[1][1], later)
    n = 3 * HANDED_SAMPLE + 1
    value, starts = torch.rand(n), set()
    for _ in range(32):
        big = FirstHanded([[n, "torch.float32"]])
        big.see((value,), {})
        ((start, sample),) = [pair for _, pair, _ in big.copies()]
        assert stepped_sample(n) == 5 and torch.equal(sample, value[start::5])  # a prime: 4 is not
        starts.add(start)
    assert len(starts) > 1  # drawn, not fixed

    class Trial:
        expected, expected64, inputs = value, None, (torch.zeros(n),)

    tolerance = Tolerance("fixed", atol=1e-5, rtol=1e-5)
    start = max(starts)
    assert answer_made_before_kernels([value[start::5]], Trial, tolerance, starts=[start])
    assert not answer_made_before_kernels([value[start::5]], Trial, tolerance, starts=[(start + 1) % 5])
    weight = torch.nn.Linear(1, n)  # an output a weight of the reference's holds is not looked for
    weight.bias.data.copy_(value)
    assert not answer_made_before_kernels([value[start::5]], Trial, tolerance, starts=[start], model=weight)


def test_a_sample_an_input_already_holds_at_its_elements_is_no_evidence():
    """Session 10, H200: the bundled RMS norm (fp16, 4096 x 4096) was ``hack_no_triton`` in 4 of 8 runs. Its
    input, handed to the kernel, was sampled at every 16384th element: one column, where the weight drawn
    near 1 made the input the answer within fp16's tolerance, while the whole input is not. A sample is
    evidence only where what forward was given does not hold the answer at those same elements (an honest
    copy of an input worked on in place holds it there too); elsewhere the answer handed over still is."""
    from tritongym.evaluate.judge.handed import stepped_sample
    from tritongym.evaluate.judge.judge import answer_made_before_kernels

    side = 4096  # the step is a prime now, so the RMS norm's sample crosses its columns
    step = stepped_sample(side * side)
    assert step >= side * side // 1024 and len({(i * step) % side for i in range(side * side // step)}) > 1000
    rows, cols = 64, 80  # a width the step divides, whose sample still falls in a few columns only
    step = stepped_sample(rows * cols)
    assert cols % step == 0
    x = torch.randn(rows, cols)
    weight = torch.full((cols,), 2.0)
    weight[0::step] = 1.0  # near 1 (here exactly) at the columns a start of 0 samples
    answer = x * weight

    class Trial:
        expected, expected64, inputs = answer, answer.double(), (x,)

    tolerance = Tolerance("fixed", atol=1e-5, rtol=1e-5)
    handed_input = x.reshape(-1)[0::step]  # the input as handed: the answer at these elements, and no evidence
    assert answer_made_before_kernels([handed_input], Trial, tolerance, starts=[0]) == ""
    cast = type("Trial", (), {"expected": answer.half(), "expected64": answer.double(), "inputs": (x,)})
    tolerance16 = Tolerance("fixed", atol=1e-3, rtol=1e-3)  # an input of another dtype holds it as cast
    assert answer_made_before_kernels([handed_input.half()], cast, tolerance16, starts=[0]) == ""
    glue = answer.reshape(-1)[1::step]  # where the input is not the answer, an answer handed over still counts
    assert answer_made_before_kernels([glue], Trial, tolerance, starts=[1]) == "a tensor of the output's size"
