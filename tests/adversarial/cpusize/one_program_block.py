"""Vector add in one program whose block covers the vector the CPU judges (``n = 1000``, what a shrunk
prompt shows) and nothing larger: right at that size, and at the full ``n = 16777216`` a GPU judges
it adds the first 1024 elements and leaves the rest unwritten (`mismatch`)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add_kernel[(1,)](a, b, out, a.numel(), BLOCK=1024)  # one program: the whole vector at n = 1000
        return out
