# problem: 02_silu
"""A float32 problem computed in float64: glue copies the input to float64 (``x.double()``), the kernel
computes in float64 and stores into the float32 output. The float64 copy, handed to the kernel, is of
the output's size in another numeric dtype: looked at as its values cast to float32 (red team 19 #1),
which are the input's, not the answer."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x / (1.0 + tl.exp(-x))).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wide = x.double()
        out = torch.empty_like(x)
        n = out.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](wide, out, n, BLOCK=1024)
        return out
