# problem: 03_row_sum
"""``from __future__ import annotations`` (constexpr annotations are strings), a constexpr default
left to its default, a module-level tl.dtype global, tl.static_assert, an IntEnum flag passed as a
constexpr, tl.reduce with a combine function of the solution's."""

from __future__ import annotations

import enum

import torch
import torch.nn as nn
import triton
import triton.language as tl

ACC_DTYPE: tl.constexpr = tl.float32


class Mode(enum.IntEnum):
    SUM = 0
    MEAN = 1


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, stride, n_cols, MODE: tl.constexpr, BLOCK: tl.constexpr = 64):
    tl.static_assert(BLOCK % 16 == 0)
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=ACC_DTYPE)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0).to(ACC_DTYPE)
    total = tl.reduce(acc, 0, _add)
    if MODE == 1:
        total = total / n_cols
    tl.store(out_ptr + row, total)


class ModelNew(nn.Module):
    def __init__(self, mode: Mode = Mode.SUM):
        super().__init__()
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_sum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], MODE=self.mode)
        return out
