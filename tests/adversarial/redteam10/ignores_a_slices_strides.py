"""Red team 10 #4b: for ``sliced_input_problem.py`` (its ``x`` a slice of a wider matrix), the
kernel reads ``x`` as if it were contiguous (``x_ptr + offsets``). The protocol sent a slice as a
contiguous copy, so on the CPU this read the right elements (`ok`); a GPU's trial slot keeps the
slice's layout, and the kernel reads the columns the slice left out: wrong."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
