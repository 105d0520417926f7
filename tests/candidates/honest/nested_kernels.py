# problem: 02_silu
"""A kernel defined in the class body and launched as self.kernel, a kernel made by a factory
function (defined inside it, a JIT helper of the module reached as a global), and a tuple argument
(Triton 3's tuple parameters) holding sizes, read by index in the kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


def make_scale_kernel():
    @triton.jit
    def scale_kernel(x_ptr, out_ptr, sizes, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < sizes[0]
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * sizes[1], mask=mask)

    return scale_kernel


class ModelNew(nn.Module):
    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * _sigmoid(x), mask=mask)

    def __init__(self):
        super().__init__()
        self.scale = make_scale_kernel()

    def forward(self, x):
        n = x.numel()
        y = torch.empty_like(x)
        self.kernel[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)
        out = torch.empty_like(x)
        self.scale[(triton.cdiv(n, 128),)](y, out, (n, 1.0), BLOCK=128)
        return out
