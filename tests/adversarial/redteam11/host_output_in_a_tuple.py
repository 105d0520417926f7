"""Red team 11 #6: the output is made without ``device=`` (host memory on a GPU) and passed to the
kernel inside a tuple argument, which Triton (3.3 and later) accepts and its launcher flattens,
checking every pointer: on a GPU the launch is refused ("Pointer argument ... cannot be accessed
from Triton (cpu tensor?)"). Red team 10's placement check looked at the top-level arguments only:
`ok` on the CPU."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(ptrs, n, BLOCK: tl.constexpr):
    a_ptr, b_ptr, out_ptr = ptrs
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        n = a.numel()
        out = torch.empty(n, dtype=a.dtype)  # no device=: host memory on a GPU
        add_kernel[(triton.cdiv(n, 1024),)]((a, b, out), n, BLOCK=1024)
        return out
