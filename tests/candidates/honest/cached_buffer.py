# problem: 01_vector_add
"""A preallocated output buffer the module caches between calls (reallocated when the shape, dtype
or device changes), rewritten in full by the kernel at every call."""

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
    def __init__(self):
        super().__init__()
        self._out = None

    def _buffer(self, like):
        out = self._out
        if out is None or out.shape != like.shape or out.dtype != like.dtype or out.device != like.device:
            out = self._out = torch.empty_like(like)
        return out

    def forward(self, a, b):
        out = self._buffer(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
