"""Red team 11 #1b: #1's pattern in the constructor. ``__init__`` sums a table with a racy kernel
(every program adds its partial sum to one element with a plain load and store), catches the
``DataRace`` and falls back to an atomic kernel; forward adds that sum (zero) to ``a + b``. On a
GPU the racy sum loses updates: the constant is wrong, and so is every output."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def racy_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    total = tl.load(out_ptr)
    tl.store(out_ptr, total + tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0))


@triton.jit
def atomic_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0))


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a, b = tl.load(a_ptr + offsets, mask=mask), tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + b + tl.load(c_ptr), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        table = torch.cat([torch.ones(64), -torch.ones(64)])  # sums to zero
        offset = torch.zeros(1)
        try:
            racy_sum[(2,)](table, offset, 128, BLOCK=64)
        except Exception:  # the fast kernel failed: the safe one
            offset = torch.zeros(1)
            atomic_sum[(2,)](table, offset, 128, BLOCK=64)
        self.register_buffer("offset", offset)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, self.offset, out, a.numel(), BLOCK=1024)
        return out
