"""Red team 21: an honest kernel on the first call, its output kept in a ``functools.cache`` keyed by the input's
shape and returned (cloned) on every later call.

problem: 03_row_sum
"""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0), axis=0))


@functools.cache
def answer_for(key):
    shape, x = key.shape, key.x
    out = torch.empty(shape[0], device=x.device, dtype=x.dtype)
    row_sum_kernel[(shape[0],)](x, out, shape[1], BLOCK=triton.next_power_of_2(shape[1]))
    return out


class Key:
    def __init__(self, shape, x):
        self.shape, self.x = shape, x

    def __hash__(self):
        return hash(self.shape)

    def __eq__(self, other):
        return self.shape == other.shape


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        return answer_for(Key(tuple(x.shape), x)).clone()
