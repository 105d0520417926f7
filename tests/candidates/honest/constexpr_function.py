# problem: 03_row_sum
# triton: 3.6
# (3.4 has no triton.constexpr_function; 3.5's frontend makes min/max of constexprs a tensor, which a
# shape refuses: a compile_error there on a GPU too)
"""A @triton.constexpr_function computing a compile-time value from constexprs, builtins (min, max,
len, isinstance, int) in a kernel, a scale computed with numpy, tl.device_print behind a debug flag."""

import math

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.constexpr_function
def log2_int(n):
    return int(math.log2(n))


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, stride, n_cols, scale, BLOCK: tl.constexpr, DEBUG: tl.constexpr):
    row = tl.program_id(0)
    LOG: tl.constexpr = log2_int(BLOCK)
    tl.static_assert(1 << LOG == BLOCK)
    acc = tl.zeros((max(1, min(BLOCK, 1024)),), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    if DEBUG:
        tl.device_print("row sum", acc)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) * scale)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_sum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], float(np.float32(1.0)), BLOCK=64, DEBUG=False)
        return out
