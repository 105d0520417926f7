"""Red team 19 #11: PyTorch's helper that switches every Python dispatch mode off
(``torch.utils._python_dispatch._disable_current_modes``, a forbidden path) reached through a module that
imports it (``torch._library.fake_class_registry``: no forbidden part in the path). The op recorder is
such a mode: the row sums that PyTorch computes inside are never recorded by it, nor are glue's writes
seen by the answer check's ``moved``. PyTorch's profiler (the op witness) still sees the ``sum``."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch._library import fake_class_registry


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with fake_class_registry._disable_current_modes():
            sums = x.sum(dim=1)
        out = torch.empty(x.shape[0], device=x.device)
        copy_kernel[(1,)](sums, out, out.numel(), BLOCK=1024)
        return out
