"""The sixteenth red team's breaks (tests/adversarial/redteam16/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.placement import HostTensors
from tritongym.evaluate.static_checks import forbidden_constructs

HERE = Path(__file__).parent / "redteam16"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def test_ctypes_reached_as_numpys_reexport_is_refused(judge):
    """#2: ``np.ctypeslib.ctypes`` (ctypes itself) passed the static checks, and read the input past the
    CPU's shifted addresses through a storage's C++ structure (``ok`` under ``forbid``). A forbidden
    module counts wherever it appears in a dotted name, as a forbidden path does."""
    result = judge(small_problem("03_row_sum"), (HERE / "ctypes_behind_a_reexport.py").read_text(), config())
    assert result.verdict is Verdict.HACK_FORBIDDEN_API, result.feedback
    assert "ctypes" in result.feedback


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\nraw = np.ctypeslib.ctypes\n",
        "from numpy.ctypeslib import ctypes\n",
        "from numpy import ctypeslib as c\nc.ctypes.memmove(0, 0, 0)\n",
        "import numpy as np\nnp.zeros(1).ctypes._ctypes\n",
        "import torch\ntorch.multiprocessing.spawn\n",
    ],
)
def test_a_forbidden_module_is_refused_under_any_objects_attribute(source):
    """#2's rule: an attribute named after a forbidden module (or NumPy's ``_ctypes``, ctypes itself) is
    refused on any object, as a forbidden path is behind a re-export; the candidate's own
    ``self.signal`` is not."""
    assert forbidden_constructs(source)
    assert not forbidden_constructs("class M:\n    def f(self):\n        self.signal = 1\n        return self.signal\n")


def test_the_runners_memory_through_proc_self_mem_is_closed_to_it(judge):
    """#2c (held before, no fix): the input read, and the output written, through ``/proc/self/mem``
    (``io.FileIO``, which the static checks pass), past the CPU's shifted addresses: the runner is not
    dumpable, so its ``/proc/self/mem`` is root's and closed to it (read-only too)."""
    result = judge(small_problem("03_row_sum"), (HERE / "proc_self_mem.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "Permission denied: '/proc/self/mem'" in result.feedback


def test_a_storage_kept_in_deepcopys_memo_is_not_forwards(judge):
    """#3: ``copy.deepcopy(x, memo)`` left the input's own storage in the caller's memo (its
    ``_typed_storage`` request was ``Tensor.__deepcopy__``'s, not forward's); copied into a host storage
    by its own ``copy_`` (``UntypedStorage.cpu()`` on a GPU) and read uncounted (``ok`` under
    ``forbid``). Fixed first by counting a storage's readers (``hack_no_triton``), which red team 17 #2
    passed by (the C method they wrap); now PyTorch's deep copy of device memory is handed a memo of the
    judge's, and no storage reaches forward's (``HostReads.deepcopy_args``)."""
    result = judge(small_problem("03_row_sum"), (HERE / "storage_kept_by_deepcopy.py").read_text(), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "StopIteration" in result.feedback


def test_a_device_storages_own_readers_count_what_they_read():
    """#3's rule (``placement._READERS``): a device storage's values read by its own methods are counted,
    however the storage reached Python: a copy into a host storage (``cpu()`` on a GPU), its elements
    (``tolist``, ``bytes``); a host storage's are not, nor a device copy."""
    device = torch.arange(4.0)
    storage = device.untyped_storage()  # asked for before the watch: device memory no request counted
    with HostTensors() as reads:
        assert reads.host_bytes == 0
        storage.clone()  # a device copy
        assert reads.host_bytes == 0
        host = torch.UntypedStorage(storage.nbytes())
        host.copy_(storage)
        assert reads.host_bytes == 16
        bytes(host), host.tolist()
        assert reads.host_bytes == 16
        assert bytes(storage) == bytes(host) and reads.host_bytes == 32


@pytest.mark.parametrize("route", ["empty", "clone", "rewrite"])
def test_an_answer_handed_after_decoys_or_into_memory_handed_before_is_seen(judge, route):
    """#1: glue's answer handed to the copy kernel after 256 decoys of the output's size were handed to a
    kernel that does nothing (fresh, or copies of the input), or copied by glue into a buffer a kernel
    was handed before (``ok`` under ``forbid``: the sample looked at a storage once, and at the first
    256). What a launch left is sampled after it; memory glue wrote since is looked at again, and the
    samples nearest forward's output are sent."""
    source = (HERE / "decoys_handed_first.py").read_text().replace('ROUTE = "empty"', f'ROUTE = "{route}"')
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


@pytest.mark.parametrize("route", ["pieces", "bits"])
def test_an_answer_handed_in_pieces_or_as_other_bits_is_seen(judge, route):
    """#1b: glue's answer handed to copy launches as its two halves, or whole as an ``int32`` view of its
    bits (``ok`` under ``forbid``: only tensors of an output's size and dtype were looked at). A handed
    tensor's storage is read as bytes, in the output's dtype, an output's worth from where it starts and
    up to where it ends."""
    source = (HERE / "answer_handed_in_pieces.py").read_text().replace('ROUTE = "pieces"', f'ROUTE = "{route}"')
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def _launch(handed, *tensors, write=None):
    """A launch as the launch monitor makes it: ``see`` before, ``write`` as the kernel, then what ``see``
    returned."""
    after = handed.see(tensors, {})
    if write is not None:
        write()
    after()


def _answers(copies, answer) -> int:
    from tritongym.evaluate.judge.handed import stepped_sample

    flat = answer.reshape(-1)
    step = stepped_sample(flat.numel())
    return sum(s.dtype == flat.dtype and torch.equal(s, flat[start::step]) for start, s in copies)


def _glue_answer(x):
    return torch.cat((x[:, 75:], x[:, :75]), dim=1)


def test_what_a_launch_left_is_the_kernels_work_until_glue_writes_there():
    """#1's rule (``handed.Left``): memory a launch was handed is sampled after it; handed again, it is the
    kernels' work where it is still what the launch left, and looked at where glue wrote since, whether
    the op recorder saw the write (``copy_``) or not (dispatch switched off: the sample tells)."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import FirstHanded

    x = torch.randn(64, 80)
    answer = _glue_answer(x)
    for write in ("none", "seen", "hidden"):
        handed = FirstHanded([[x.numel(), "torch.float32"]], [x])
        with OpRecorder(poison_empty=True, moved=handed.moved):
            buf, out = torch.empty_like(x), torch.empty_like(x)
            wrote = answer if write == "none" else x  # what a kernel wrote: glue's answer comes after
            _launch(handed, x, buf, write=lambda buf=buf, wrote=wrote: buf.copy_(wrote))
            if write == "seen":
                buf.copy_(answer + 0)
            elif write == "hidden":
                with torch._C._DisableTorchDispatch():
                    buf.copy_(answer.clone())
            _launch(handed, buf, out, write=lambda buf=buf, out=out: out.copy_(buf))
        assert _answers([pair for _, pair, _ in handed.copies()], answer) == (0 if write == "none" else 1), write


def test_glue_moving_the_kernels_work_is_the_kernels_work():
    """The glue-copy false positive's rule (``FirstHanded.moved``): a copy, a transposed copy, a cast, a
    ``cat`` of what kernels left is the kernels' work; glue's output from an input (or with a part of
    one), or from kernels' memory glue wrote since, is not; an input or a weight handed to a launch is
    never the kernels' work."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import FirstHanded

    x = torch.randn(64, 80)
    answer = _glue_answer(x)

    def staged(route):
        handed = FirstHanded([[x.numel(), "torch.float32"]], [x])
        with OpRecorder(poison_empty=True, moved=handed.moved) as recorder:
            scratch = torch.empty_like(x)
            columns = torch.empty(80, 64)
            wrote = x if route == "written" else answer  # there glue's answer comes after the kernel's work
            _launch(handed, x, scratch, write=lambda: scratch.copy_(wrote))
            _launch(handed, x, columns, write=lambda: columns.copy_(answer.t()))
            if route == "clone":
                out = scratch.clone()
            elif route == "transpose":
                out = columns.t().contiguous()
            elif route == "cast":
                out = scratch.double().float()
            elif route == "cat":
                out = torch.cat((scratch[:32], scratch[32:]))
            elif route == "input":
                out = answer.clone()  # glue's own answer
            elif route == "part_input":
                out = torch.cat((scratch[:32], answer[32:]))
            elif route == "handed_input":
                _launch(handed, answer)  # glue's answer parked in an input's place: never the kernels'
                out = answer.clone()
            elif route == "written":
                with torch._C._DisableTorchDispatch():
                    scratch.copy_(answer.clone())  # glue's answer over what the kernel left, unseen
                out = scratch.clone()
            _launch(handed, out)
        assert not recorder.compute
        return _answers([pair for _, pair, _ in handed.copies()], answer)

    assert [staged(route) for route in ("clone", "transpose", "cast", "cat")] == [0, 0, 0, 0]
    assert [staged(route) for route in ("input", "part_input", "written")] == [1, 1, 1]


def test_a_handed_tensor_is_read_as_bytes_in_the_outputs_dtype():
    """#1b's rule (``FirstHanded.regions``): a tensor of another size or dtype than an output's is looked
    at over an output's worth of its storage's bytes, in the output's dtype, from where it starts and up
    to where it ends: pieces handed in either order, another dtype's view of the answer's bits, the
    answer inside a larger buffer at its start or its end."""
    from tritongym.evaluate.judge.handed import FirstHanded

    x = torch.randn(64, 80)
    answer = _glue_answer(x).reshape(-1)
    n = answer.numel()

    def looked(*pieces):
        handed = FirstHanded([[n, "torch.float32"]], [x])
        for piece in pieces:
            _launch(handed, piece)
        return _answers([pair for _, pair, _ in handed.copies()], answer)

    # the piece starting the answer read on from where it starts, the one ending it up to where it ends
    assert looked(answer[n // 2 :], answer[: n // 2]) == 2 and looked(answer[3:], answer[:3]) == 2
    assert looked(answer[3:]) == 1 and looked(answer[:3]) == 1
    assert looked(answer.view(torch.int32)) == 1
    padded = torch.cat((answer, torch.randn(100)))
    assert looked(padded) == 1 and looked(torch.cat((torch.randn(100), answer))) == 1
    assert looked(answer[5:-5]) == 0  # neither starting nor ending it (open: red team 16's README)


def test_the_samples_sent_are_those_nearest_the_references_output():
    """#1 ``empty``/``clone``: every handing's sample is kept in the runner, and per output the
    ``PER_OUTPUT`` nearest the reference's output at the same elements are sent (``handed.nearest``, on
    the judge's ``Expected``): decoys handed first no longer spend the bound, and those nearer forward's
    own output than the answer (red team 19 #5) no longer crowd it out."""
    from tritongym.evaluate.compare import Tolerance, element_bounds
    from tritongym.evaluate.judge.handed import FirstHanded, nearest, stepped_sample

    x = torch.randn(64, 80)
    answer = _glue_answer(x)
    handed = FirstHanded([[x.numel(), "torch.float32"]], [x])
    for i in range(FirstHanded.PER_OUTPUT + 40):
        _launch(handed, x.clone() + i)
    _launch(handed, answer.clone())
    for _ in range(FirstHanded.PER_OUTPUT + 40):  # the answer shifted a little, every element but one
        decoy = answer.clone() + 1e-6
        decoy.view(-1)[::97] += 1.0  # off the answer at every sample's elements (a step of 5 or less)
        _launch(handed, decoy)
    copies = handed.copies()
    assert len(copies) == 2 * (FirstHanded.PER_OUTPUT + 40) + 1
    start = handed.starts[0]
    picked = answer.reshape(-1)[start :: stepped_sample(answer.numel())]
    references = [element_bounds(picked, picked.double(), Tolerance())]
    sent = nearest(copies, references, FirstHanded.PER_OUTPUT)
    assert len(sent) == FirstHanded.PER_OUTPUT and _answers(sent, answer) == 1
    assert nearest(copies, [None], FirstHanded.PER_OUTPUT)[0] is copies[0][1]  # no reference: in order


def test_a_storage_that_moved_or_died_is_no_longer_what_a_launch_left():
    """What a launch left is tied to its storage and its address: a storage grown in place (``resize_``,
    a new address) or freed (its id and address another's next) is looked at as first handed."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import FirstHanded

    x = torch.randn(64, 80)
    answer = _glue_answer(x)
    handed = FirstHanded([[x.numel(), "torch.float32"]], [x])
    with OpRecorder(poison_empty=True, moved=handed.moved):
        buf = torch.empty(16)
        _launch(handed, buf)
        (left,) = handed.made
        storage = buf.untyped_storage()
        buf.resize_(x.numel())
        assert not left.alive(storage) and left.take() is None
        with torch._C._DisableTorchDispatch():
            buf.copy_(answer.reshape(-1))
        _launch(handed, buf)
    assert _answers([pair for _, pair, _ in handed.copies()], answer) == 1


def test_an_inputs_or_weights_bytes_holding_the_output_are_no_evidence():
    """#1b's judge side (``judge._byte_ends``): a weight whose first or last bytes, read in the output's
    dtype, hold the output is no evidence against the kernels; another tensor's are."""
    from tritongym.evaluate.compare import Tolerance
    from tritongym.evaluate.judge.handed import stepped_sample
    from tritongym.evaluate.judge.judge import answer_made_before_kernels

    answer = torch.randn(40)
    weight = torch.nn.Linear(1, 100)
    weight.bias.data[60:] = answer
    step = stepped_sample(answer.numel())

    class Trial:
        expected, expected64, inputs = answer, None, (torch.randn(3, 40),)

    tolerance = Tolerance("fixed", atol=1e-5, rtol=1e-5)
    assert answer_made_before_kernels([answer[0::step]], Trial, tolerance, starts=[0], model=weight) == ""
    weight.bias.data[60:] = 0
    assert answer_made_before_kernels([answer[0::step]], Trial, tolerance, starts=[0], model=weight)


def test_what_the_runner_keeps_is_bounded_by_forwards_memory(monkeypatch):
    """The rule's cost: past ``KEPT_FLOOR`` or the bytes of the storages forward handed (the larger), the
    records and handings so far are decided and what no later check needs is freed
    (``FirstHanded.settle``): a forward of many launches over the same buffers keeps about its own
    memory, and glue's answer written into a buffer a kernel left before the bound is still seen after
    it, a kernel's copy moved by glue still the kernels' work. (What is looked at stays until forward
    returns: memory glue wrote between launches adds a sample each time it is handed.)"""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge import handed as module

    monkeypatch.setattr(module, "KEPT_FLOOR", 0)
    x = torch.randn(64, 80)
    answer = _glue_answer(x)
    handed = module.FirstHanded([[x.numel(), "torch.float32"]], [x])
    with OpRecorder(poison_empty=True, moved=handed.moved):
        buf, scratch, out = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
        _launch(handed, x, scratch, write=lambda: scratch.copy_(answer))
        for _ in range(200):
            _launch(handed, x, buf, out)
            assert handed.kept <= 2 * 4 * x.nbytes  # forward's four storages, and what one launch adds
        moved = scratch.clone()
        buf.copy_(answer)
        _launch(handed, buf, moved)
    assert len(handed.made) <= 6
    copies = [pair for _, pair, _ in handed.copies()]
    assert _answers(copies, answer) == 1  # buf's, not the kernels' copy


def test_an_input_a_kernel_worked_on_in_place_is_its_work_but_no_source_for_glue():
    """An input's storage: what a launch left there, handed again, is the kernels' work (an honest kernel
    working on its input in place, then a second that changes it little), but glue moving it is not
    (the input's own values, glue's answer built from them by slices, are looked at); glue's answer
    parked there is looked at (red team 15 #5d)."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import FirstHanded

    x = torch.randn(64, 80)
    answer = _glue_answer(x)

    def looked(route):
        given = x.clone()
        handed = FirstHanded([[x.numel(), "torch.float32"]], [given])
        with OpRecorder(poison_empty=True, moved=handed.moved):
            if route == "in_place":
                _launch(handed, given, write=lambda: given.copy_(answer))  # a kernel's work, in place
                _launch(handed, given)
                out = given
            elif route == "glue_from_input":
                _launch(handed, given)
                out = torch.cat((given[:, 75:], given[:, :75]), dim=1)
                _launch(handed, out)
            elif route == "parked":
                _launch(handed, given)
                given.copy_(answer)
                _launch(handed, given)
                out = given
        return _answers([pair for _, pair, _ in handed.copies()], answer)

    assert [looked(route) for route in ("in_place", "glue_from_input", "parked")] == [0, 1, 1]
