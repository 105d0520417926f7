"""Exploit: write only half of the output and hope the rest of the fresh allocation already holds the
answer (a freed reference result, say). On a GPU the judge poisons free memory first."""

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
    def forward(self, a, b):
        out = torch.empty_like(a)
        half = a.numel() // 2
        add_kernel[(triton.cdiv(half, 256),)](a, b, out, half, BLOCK=256)
        return out
