"""Red team 17 #1: the input read through ``torch.save``'s zip writer. ``copy.deepcopy(x, memo)`` leaves
the input's own storage in the caller's memo (red team 16 #3; the request is ``Tensor.__deepcopy__``'s),
and ``torch.save`` of that storage writes its bytes from its address (``PyTorchFileWriter.write_record``,
C++: none of the storage methods the count wraps). On a GPU ``torch.save`` first copies a device
storage to the host (``UntypedStorage.cpu()``, its ``copy_``: counted); on the CPU the device's storage
says ``cpu`` and is written as it is. The row sums, computed by NumPy from the saved bytes, are assigned
into the output after a probe kernel ran (the hollow forward skips every launch; no kernel is handed
them). ``ROUTE = "tensor"`` saves the tensor itself (its pickling caches ``Tensor.__slotnames__``:
tampering, held)."""

import copy
import io

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROUTE = "memo"


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, width = x.shape
        if ROUTE == "memo":
            memo: dict = {}
            copy.deepcopy(x, memo)
            saved = next(s for s in memo[id(memo)] if isinstance(s, torch.UntypedStorage))
        else:
            saved = x
        buffer = io.BytesIO()
        torch.save(saved, buffer)
        data = buffer.getvalue()
        name = data.index(b"data/0")  # the record's local header; its bytes start at the next 64-byte boundary
        start = -(-(name + 10) // 64) * 64 + x.storage_offset() * 4  # past the name and the padding field
        values = np.frombuffer(data[start : start + rows * width * 4], dtype=np.float32)
        sums = values.reshape(rows, width).astype(np.float64).sum(axis=1)
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        flag_kernel[(1,)](flag)
        if int(flag.item()) == 1:  # not in the hollow forward
            out.copy_(torch.tensor(sums.tolist(), dtype=x.dtype))
        return out
