"""Red team 21: PyTorch's row sum reached as ``torch.ops.aten.sum.dim_IntList`` by computed names, the
result copied into the output by a kernel.

problem: 03_row_sum
"""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        op = functools.reduce(getattr, ["ops", "at" + "en", "s" + "um", "dim_IntList"], torch)
        s = op(x, [1])
        out = torch.empty_like(s)
        copy_kernel[(triton.cdiv(s.numel(), 256),)](s, out, s.numel(), BLOCK=256)
        return out
