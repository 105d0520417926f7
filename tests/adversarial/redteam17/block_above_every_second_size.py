"""Red team 15's open "a block larger than every drawn second size": one program whose constant block
(4096) covers every ``n`` a shrunk 01_vector_add can be judged at (1000, and a second size drawn in
1032..4088), and a fraction of the full size's 16,777,216 elements a GPU judges (``mismatch`` there)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(1,)](a, b, out, a.numel(), BLOCK=4096)
        return out
