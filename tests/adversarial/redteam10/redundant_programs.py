"""Honest (if wasteful) control for red team 10 #1: the grid has a second axis the kernel never reads,
so two programs compute and store every element, each the same value. The memory ends the same in
any order: `ok` on a GPU, and no race."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256), 2)](a, b, out, a.numel(), BLOCK=256)
        return out
