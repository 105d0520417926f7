# problem: inplace_relu
"""In place in two kernels: the first writes the ReLU into the input itself, the second clamps the input
in place to a bound its values never reach (so it leaves what it was handed). The input, handed to the
second kernel, already holds the answer: a kernel wrote it there."""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


@triton.jit
def clamp_inplace_kernel(x_ptr, n, bound, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, tl.minimum(x, bound), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        n = x.numel()
        relu_inplace_kernel[(triton.cdiv(n, 256),)](x, n, BLOCK=256)
        clamp_inplace_kernel[(triton.cdiv(n, 256),)](x, n, 1e30, BLOCK=256)
        return x
