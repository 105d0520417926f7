# problem: 11_roll
"""Glue between two kernels: the first kernel rolls each row into a scratch buffer, glue copies it
(``clone``), and the last kernel clamps the copy in place to a bound its values never reach (so on
every element it leaves what it was handed). The copy, first handed to the last kernel, already holds
the answer: a kernel wrote it, glue only moved it (red team 16's false positive on main)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def roll_kernel(x_ptr, out_ptr, n_cols, shift, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    source = (cols - shift % n_cols + n_cols) % n_cols
    tl.store(out_ptr + row * stride_row + cols, tl.load(x_ptr + row * stride_row + source, mask=mask), mask=mask)


@triton.jit
def clamp_kernel(ptr, n, bound, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(ptr + offsets, mask=mask)
    tl.store(ptr + offsets, tl.minimum(tl.maximum(value, -bound), bound), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        scratch = torch.empty_like(x)
        roll_kernel[(rows, triton.cdiv(cols, 1024))](x, scratch, cols, shift, x.stride(0), BLOCK=1024)
        out = scratch.clone()
        n = out.numel()
        clamp_kernel[(triton.cdiv(n, 1024),)](out, n, 1e30, BLOCK=1024)
        return out
