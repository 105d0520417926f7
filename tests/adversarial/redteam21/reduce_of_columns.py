"""Red team 21: the row sums as ``functools.reduce(operator.add, x.unbind(1))`` (column by column, Python's
operator on tensors), copied by a kernel.

problem: 03_row_sum
"""

import functools
import operator

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
        s = functools.reduce(operator.add, x.unbind(1)).contiguous()
        out = torch.empty_like(s)
        copy_kernel[(triton.cdiv(s.numel(), 256),)](s, out, s.numel(), BLOCK=256)
        return out
