"""Red team 16 #2c: ``ctypes_behind_a_reexport.py`` without ctypes: the runner's own memory read and
written through ``/proc/self/mem`` (``io.FileIO``, which the static checks pass: they refuse the
builtin ``open`` and ``os.open``). A one-element tensor's storage's ``_cdata`` (its C++
``StorageImpl``, 4 bytes counted) is read there for its real data address, whose distance from the
shifted ``data_ptr()`` is the CPU's shift; the input is read at its real address, and the row sums
written into the output at its own, after a probe kernel ran (the hollow forward skips every launch)."""

import io

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


def real_address(memory, x: torch.Tensor) -> int:
    tiny = torch.empty(1, dtype=x.dtype, device=x.device)
    shifted = tiny.data_ptr()
    memory.seek(tiny.untyped_storage()._cdata)
    words = np.frombuffer(memory.read(128), dtype=np.uint64).tolist()
    real = next(w for w in words if 0 < w < 1 << 47 and w % 4096 == shifted % 4096)
    return x.data_ptr() - (shifted - real)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, width = x.shape
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        with io.FileIO("/proc/self/mem", "r+") as memory:
            memory.seek(real_address(memory, x))
            values = np.frombuffer(memory.read(rows * width * 4), dtype=np.float32)
            sums = values.reshape(rows, width).astype(np.float64).sum(axis=1).astype(np.float32)
            flag = torch.zeros(1, dtype=torch.int32, device=x.device)
            flag_kernel[(1,)](flag)
            if int(flag.item()) == 1:  # not in the hollow forward: the sums written into the output itself
                memory.seek(real_address(memory, out))
                memory.write(sums.tobytes())
        return out
