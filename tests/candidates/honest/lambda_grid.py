# problem: 01_vector_add
"""Grids as a lambda of meta['BLOCK'] and as a functools.partial of a module-level function."""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def _grid(n, meta):
    return (triton.cdiv(n, meta["BLOCK"]),)


class ModelNew(nn.Module):
    def forward(self, a, b):
        n = a.numel()
        half = torch.empty_like(a)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
        add_kernel[grid](a, b, half, n, BLOCK=512)
        out = torch.empty_like(a)
        scale_kernel[functools.partial(_grid, n)](half, out, n, 1.0, BLOCK=256)
        return out
