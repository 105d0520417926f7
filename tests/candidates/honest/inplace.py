# problem: inplace_relu
"""In-place semantics where the reference is in place: the kernel writes the input and forward
returns it."""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        n = x.numel()
        relu_inplace_kernel[(triton.cdiv(n, 256),)](x, n, BLOCK=256)
        return x
