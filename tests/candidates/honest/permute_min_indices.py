# problem: kb1_52_argmin_dim
"""argmin over dim 1 with tl.min(..., return_indices=True) after tl.permute and tl.reshape of the
loaded tile, padded with +inf; the output allocated by x.new_empty(dtype=torch.int64)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmin_kernel(x_ptr, out_ptr, D1, D2, BR: tl.constexpr, BC: tl.constexpr):
    b = tl.program_id(0)
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    x = tl.load(x_ptr + b * D1 * D2 + r[:, None] * D2 + c[None, :], mask=(r[:, None] < D1) & (c[None, :] < D2),
                other=float("inf"))
    xt = tl.permute(x, (1, 0))
    flat = tl.reshape(xt, (BC, BR))
    _, idx = tl.min(flat, axis=1, return_indices=True)
    tl.store(out_ptr + b * D2 + c, idx.to(tl.int64), mask=c < D2)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, D1, D2 = x.shape
        out = x.new_empty((B, D2), dtype=torch.int64)
        argmin_kernel[(B,)](x, out, D1, D2, BR=triton.next_power_of_2(D1), BC=triton.next_power_of_2(D2))
        return out
