# problem: 04_softmax
"""JIT helpers taking a constexpr, a string constexpr choosing the variant, a dict of kernels
dispatched on the host, tl.range with num_stages, tl.multiple_of and tl.max_contiguous."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def _exp(x, FAST: tl.constexpr):
    if FAST:
        return tl.exp2(x * 1.4426950408889634)
    return tl.exp(x)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, VARIANT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = _exp(x - _row_max(x), VARIANT == "fast")
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def copy_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    for start in tl.range(0, n_cols, BLOCK_N, num_stages=2):
        cols = start + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offsets = rows[:, None] * stride + tl.max_contiguous(tl.multiple_of(cols, BLOCK_N), BLOCK_N)[None, :]
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


KERNELS = {"softmax": softmax_kernel, "copy": copy_rows_kernel}


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        staged = torch.empty_like(x)
        KERNELS["copy"][(triton.cdiv(rows, 4),)](x, staged, rows, cols, x.stride(0), BLOCK_M=4, BLOCK_N=32)
        out = torch.empty_like(x)
        KERNELS["softmax"][(rows,)](
            staged, out, cols, staged.stride(0), VARIANT="fast", BLOCK=triton.next_power_of_2(cols)
        )
        return out
