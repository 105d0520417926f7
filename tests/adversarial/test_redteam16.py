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
