# problem: sum_max_dict
"""A dict output, both entries written by one kernel; the optional bias pointer passed as None."""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_max_kernel(x_ptr, bias_ptr, sum_ptr, max_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + cols, mask=mask, other=0.0)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    tl.store(max_ptr + row, tl.max(tl.where(mask, x, -float("inf")), axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        out = {"sum": x.new_empty(rows), "max": x.new_empty(rows)}
        sum_max_kernel[(rows,)](x, None, out["sum"], out["max"], x.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
        return out
