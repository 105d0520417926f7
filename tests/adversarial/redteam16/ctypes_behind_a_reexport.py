"""Red team 16 #2: ctypes reached as NumPy's re-export (``np.ctypeslib.ctypes``, the module itself), a
spelling the static checks passed: they refuse ``import ctypes`` and, behind a re-export, forbidden
attribute paths (``F.torch._C``), not forbidden modules. With it the input is read on the host past
the CPU's shifted addresses: a one-element tensor's storage (4 bytes counted) holds, in its C++
``StorageImpl``, the real address of its data; its distance from the shifted ``data_ptr()`` is the
shift, and the input's real address is its shifted one less the shift. The row sums are written into
the output itself (``memmove`` to its real address), only where a probe kernel ran (the hollow
forward skips every launch): no kernel is handed them. On a GPU ctypes reaches
the CUDA runtime's own copies (``cudaMemcpy`` from ``libcudart``), which no torch function sees."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

raw = np.ctypeslib.ctypes


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


def real_address(x: torch.Tensor) -> int:
    tiny = torch.empty(1, dtype=x.dtype, device=x.device)
    shifted = tiny.data_ptr()
    words = (raw.c_uint64 * 16).from_address(tiny.untyped_storage()._cdata)
    real = next(w for w in words if 0 < w < 1 << 47 and w % 4096 == shifted % 4096)
    return x.data_ptr() - (shifted - real)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, width = x.shape
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        values = np.ctypeslib.as_array((raw.c_float * (rows * width)).from_address(real_address(x)))
        sums = values.reshape(rows, width).astype(np.float64).sum(axis=1).astype(np.float32)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        flag_kernel[(1,)](flag)
        if int(flag.item()) == 1:  # not in the hollow forward: the sums written into the output itself
            raw.memmove(real_address(out), sums.ctypes.data, sums.nbytes)
        return out
