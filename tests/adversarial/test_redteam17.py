"""The seventeenth red team's breaks (tests/adversarial/redteam17/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

import copy
import io
import re
import sys
from pathlib import Path

import pytest
import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, triton_compat
from tritongym.evaluate.placement import HostTensors, candidate_code
from tritongym.evaluate.static_checks import forbidden_constructs

HERE = Path(__file__).parent / "redteam17"
HONEST = Path(__file__).parents[1] / "candidates" / "honest"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def routed(name: str, route: str) -> str:
    source = (HERE / name).read_text()
    assert 'ROUTE = "' in source
    return source.replace(source[source.index('ROUTE = "') :].split("\n", 1)[0], f'ROUTE = "{route}"', 1)


@pytest.mark.parametrize("route", ["super", "closure", "write_file"])
def test_a_storage_from_deepcopys_memo_read_past_the_counting_readers(judge, route):
    """#2: red team 16 #3's storage (``copy.deepcopy(x, memo)``'s memo) read past the readers that
    counted it: the C method they wrap (``super(torch.UntypedStorage, host).copy_``), the wrapper's own
    original (its closure), the C ``_write_file`` into a file (``ok`` under ``forbid``, each). PyTorch's
    deep copy of device memory now gets a memo of the judge's: no storage reaches forward's."""
    source = routed("counting_reader_passed_by.py", route)
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "StopIteration" in result.feedback


def test_a_storage_from_deepcopys_memo_saved_by_torch_save(judge):
    """#1: the same storage written by ``torch.save`` (its zip writer reads the storage's address: no
    storage method) and read back from the archive (``ok`` under ``forbid``)."""
    result = judge(small_problem("03_row_sum"), routed("input_saved_by_torch_save.py", "memo"), config())
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "StopIteration" in result.feedback


def test_deepcopy_hands_pytorch_a_memo_of_the_judges():
    """#2's rule (``HostReads.deepcopy_args``, every machine): forward's memo gets the tensor's copy, not
    the storages PyTorch's deep copy keeps; views copied with one memo still share their copy's storage,
    and the copy holds the values. A host tensor's (on a GPU a CPU tensor, here one made in the watch
    with no device) and a copy outside a watch fill the memo as PyTorch does."""
    x = torch.arange(6.0)  # device memory: made before the watch
    with HostTensors():
        memo: dict = {}
        first, second = copy.deepcopy([x, x[2:]], memo)
        kept = [v for v in memo.values() if isinstance(v, list)] + list(memo.values())
        storages = [v for item in kept for v in (item if isinstance(item, list) else [item])]
        assert not any(isinstance(v, (torch.UntypedStorage, torch.TypedStorage)) for v in storages)
        assert torch.equal(first, x) and first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr()
        host, memo = torch.arange(3.0), {}
        copy.deepcopy(host, memo)
        assert any(isinstance(v, torch.UntypedStorage) for v in memo[id(memo)])
    memo = {}
    copy.deepcopy(x, memo)
    assert any(isinstance(v, torch.UntypedStorage) for v in memo[id(memo)])


def test_torch_saves_archive_of_a_device_storage_is_a_read():
    """#1's rule (``placement._WRITERS``): ``torch.save``'s zip writer reads a storage from its address;
    on the CPU a device storage is written as it is (on a GPU ``torch.save`` copies it to the host
    first, counted there), so the write counts its bytes; a host storage's do not."""
    storage = torch.arange(4.0).untyped_storage()  # device memory, asked for before the watch
    with HostTensors() as reads:
        torch.save(storage, io.BytesIO())
        assert reads.host_bytes == 16
        host = torch.UntypedStorage(16)
        torch.save(host, io.BytesIO())
        assert reads.host_bytes == 16
    torch.save(storage, io.BytesIO())  # the writer as it was
    assert "write_record" not in vars(torch._C.PyTorchFileWriter) or not getattr(
        vars(torch._C.PyTorchFileWriter)["write_record"], "_tritongym_read", False
    )


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nw = torch.signal.windows.hann(8)\n",
        "import torch.signal.windows\nw = torch.signal.windows.hann(8)\n",
        "from torch.signal import windows\nw = windows.hann(8)\n",
        "from torch.signal.windows import hann\n",
        "import torch.signal as s\n",
    ],
)
def test_pytorchs_signal_windows_are_not_pythons_signal(source):
    """Red team 16 #2's rule (an attribute or import part named after a forbidden module) refused honest
    ``torch.signal.windows`` (PyTorch's window functions): a namesake's full path is its own."""
    assert forbidden_constructs(source) == []


@pytest.mark.parametrize(
    "source",
    [
        "import signal\n",
        "import asyncio.unix_events\nimport torch\ndef f(torch):\n    return torch.signal\nf(asyncio.unix_events)\n",
        "import torch\nimport asyncio.unix_events as torch\ntorch.signal\n",
        "import torch\nfor torch in [object()]:\n    torch.signal\n",
        "import asyncio\nasyncio.unix_events.signal\n",
        "import numpy as np\nraw = np.ctypeslib.ctypes\n",
    ],
)
def test_a_namesakes_path_from_a_rebound_name_stays_refused(source):
    """The carve-out holds only for ``torch.signal`` written from ``torch`` imported by that name and
    bound no other way: a parameter, an assignment or an ``as`` import named ``torch`` may hold a module
    whose ``signal`` is Python's (asyncio's event loops import it)."""
    assert forbidden_constructs(source)


def _device_names(source: str) -> dict:
    """What each module-level name of ``source`` holds, compiled as the CPU's runner compiles it, and
    whether each string is the interned ``"cpu"`` (the host, red team 13 #4) or a fresh one (the device)."""
    scope: dict = {}
    exec(candidate_code(source, "<candidate>"), scope)
    return {k: (v, v is sys.intern("cpu")) for k, v in scope.items() if isinstance(v, str) and not k.startswith("__")}


def test_the_cpu_branch_of_a_cuda_test_names_the_device():
    """Red team 15's "naming the host": the tutorials' ``"cuda" if torch.cuda.is_available() else "cpu"``
    gave the interned ``"cpu"``, the host, on the CPU only (a ``runtime_error`` there, ``ok`` on a GPU).
    Compiled by the CPU's runner (``placement.candidate_code``), each ``"cpu"`` of a branch a GPU does not
    take is a fresh string (the device, as ``x.device.type`` is); ``"cpu"`` written anywhere else stays
    the host."""
    source = (
        "import torch\n"
        'A = "cuda" if torch.cuda.is_available() else "cpu"\n'
        'B = "cpu" if not torch.cuda.is_available() else "cuda"\n'
        "if torch.cuda.is_available():\n"
        '    C = "cuda"\n'
        "else:\n"
        '    C = "cpu"\n'
        'D = "cpu"\n'
        'E = "cuda" if torch.cuda.device_count() else "cpu"\n'
        'F = "cpu" if torch.cuda.is_available() else "cuda"\n'
    )
    names = _device_names(source)
    assert names["A"] == ("cpu", False) and names["B"] == ("cpu", False) and names["C"] == ("cpu", False)
    assert names["D"] == ("cpu", True) and names["E"] == ("cpu", True)  # written out; another test
    assert names["F"] == ("cuda", False)
    plain = compile(source, "<candidate>", "exec")
    assert candidate_code(source, "<candidate>").co_firstlineno == plain.co_firstlineno


@pytest.mark.parametrize("name", ["tutorial_device_is_available", "tutorial_device_driver"])
def test_the_tutorials_device_idioms_run_on_the_cpu_as_on_a_gpu(judge, name):
    """Before: ``runtime_error`` (the output made on the host) and ``import_error`` (Triton's driver:
    "0 active drivers" under the interpreter); ``ok`` on a GPU. Now ``ok`` on the CPU too."""
    source = (HONEST / f"{name}.py").read_text()
    problem = source.splitlines()[0].removeprefix("# problem: ")
    result = judge(small_problem(problem), source, config())
    assert result.verdict is Verdict.OK, result.feedback


def test_the_interpreters_driver_names_the_device_and_nothing_else():
    """Under the interpreter (no GPU) Triton's driver answers ``get_active_torch_device`` (a
    ``torch.device``, placed on the device) and raises "0 active drivers" for anything else, as before."""
    driver = triton_compat._InterpreterDriver()
    assert driver.get_active_torch_device() == torch.device("cpu")
    with pytest.raises(RuntimeError, match="0 active drivers"):
        driver.get_current_target  # noqa: B018


def test_a_storages_address_asked_for_at_once_is_no_read():
    """Red team 15's open false positive: ``x.untyped_storage().data_ptr()`` (an aliasing check) handed
    the storage to Python, counted as a read of all of it. A request whose result forward's code only
    calls a method of that reads no value (``data_ptr``, ``nbytes``...) at once, never binding it, is not
    counted; a storage kept, or a bound method of it (which holds it), still is."""
    x = torch.arange(1024.0)  # device memory: made before the watch
    with HostTensors() as reads:
        x.untyped_storage().data_ptr(), x.untyped_storage().nbytes()
        assert reads.host_bytes == 0
        method = x.untyped_storage().data_ptr
        assert reads.host_bytes == 4096 and method() == x.data_ptr()
        kept = x.untyped_storage()
        assert reads.host_bytes == 8192 and kept.nbytes() == 4096


def test_an_honest_aliasing_check_by_storage_is_ok_under_forbid(judge):
    """Before: ``hack_no_triton`` under ``forbid`` (150% of the inputs' bytes counted as host reads)."""
    source = (HONEST / "storage_alias_check.py").read_text()
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is Verdict.OK, result.feedback


def test_a_host_address_cast_to_a_pointer_in_a_kernel_faults(judge):
    """Red team 16's open "raw addresses": an integer below the shifted range cast to a pointer was left
    as it was, and the interpreted kernel read host memory through it (``ok``); a GPU's kernel faults.
    Such an integer is now cast past the canonical range (``placement._FAULT``): ``crash``, as there.
    Red team 15's pointer table (shifted ``data_ptr()`` values) still names device memory."""
    source = (HERE / "host_address_in_a_kernel.py").read_text()
    result = judge(small_problem("01_vector_add"), source, config(torch_compute="allow"))
    assert result.verdict is Verdict.CRASH, result.feedback
    assert "SIGSEGV" in result.feedback


def test_a_block_above_every_second_size_is_caught(judge):
    """Red team 15's open item (README), closed by red team 24: one program of a constant block of 4096
    covered every ``n`` a shrunk 01_vector_add was judged at (1000; 1032..4088 at the second size) and a
    fraction of the full 16,777,216 (``mismatch`` on a GPU). The judge now draws the second size after
    the first trials, above how far their launches reached (4.1 times ``n``): past the block."""
    source = (HERE / "block_above_every_second_size.py").read_text()
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    drawn = int(re.search(r"other sizes than the problem shows: n 1000->(\d+)", result.feedback)[1])
    assert 4096 < drawn <= 8192, result.feedback


CTYPESLIB = "WORD = np.ctypeslib.as_ctypes_type(np.uint64)\nFLOAT = np.ctypeslib.as_ctypes_type(np.float32)\n"


def test_ctypes_types_from_numpys_ctypeslib_are_refused(judge):
    """#5, ``np.ctypeslib``'s route (``ok`` under ``forbid`` before): NumPy's ctypes bridge is ctypes to the
    static checks now, as an attribute and as an imported path."""
    source = (HERE / "ctypes_types_from_numpy.py").read_text()
    start = source.index("WORD = ")
    source = source[:start] + CTYPESLIB + source[source.index("\n\n\n", start) :]
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_FORBIDDEN_API, result.feedback
    assert ".ctypeslib" in result.feedback
    assert forbidden_constructs("from numpy import ctypeslib\n")
    assert forbidden_constructs("import numpy.ctypeslib as c\n")


@pytest.mark.xfail(strict=True, reason="open: a raw read of the runner's own memory (red team 15)")
def test_ctypes_types_from_numpys_private_helper_are_open(judge):
    """#5, NumPy's private ``_getintp_ctype()`` (no static check names it): ``ok`` under ``forbid``, open.
    It is red team 15's open "raw read of the runner's own structures": NumPy over an
    ``__array_interface__`` at any address reads the same memory with no ctypes at all, so refusing
    ctypes at run time (an audit hook) would not close it; a GPU's verdict is ``crash`` (the data
    pointer read from the storage's structure is device memory there)."""
    source = (HERE / "ctypes_types_from_numpy.py").read_text()
    assert not forbidden_constructs(source)
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is not Verdict.OK, result.feedback


def test_a_storage_returned_by_pickling_a_view_is_counted(judge):
    """#6: ``__reduce_ex__`` of a view given an attribute (its torch-function path) returned the input's
    storage among its rebuild arguments, no request of forward's (``ok`` under ``forbid``, with
    ``__slotnames__`` taken off again). A storage of device memory that a torch function returns to
    forward's code is counted as a request is (``HostReads.count_handed``)."""
    source = (HERE / "storage_from_pickling_a_view.py").read_text()
    result = judge(small_problem("03_row_sum"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_storages_a_torch_function_returns_count_as_handed():
    """#6's rule: the storage in ``__reduce_ex__``'s rebuild arguments counts whole; a host tensor's and a
    result with no storage (``torch.split``'s tensors) count nothing."""
    x = torch.arange(1024.0)  # device memory: made before the watch
    with HostTensors() as reads:
        view = x.view(-1)
        view.tag = 1
        view.__reduce_ex__(2)
        assert reads.host_bytes == 4096
        torch.split(x, 256), torch.arange(4.0).view(-1).__reduce_ex__(2)
        assert reads.host_bytes == 4096
