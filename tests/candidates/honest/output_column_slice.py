# problem: 03_row_sum
"""Row sums written into the first column of a two-column buffer and returned as that column (a strided
view, not dense): the output the runner sends is copied inside forward's watch (red team 21 #1), and the
copy holds the same values as the view."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row * out_stride, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        both = torch.empty(rows, 2, device=x.device, dtype=x.dtype)
        row_sum_kernel[(rows,)](x, both, cols, both.stride(0), BLOCK=128)
        return both[:, 0]
