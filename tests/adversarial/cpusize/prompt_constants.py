"""Row sum with the problem's size constants copied from the prompt a CPU run shows (``batch_size = 8``,
``dim = 300``), as generated code often does: the grid and the block follow the copies, not the input.
Right at those sizes; at the full ``4096 x 8192`` a GPU judges it sums the first 300 columns of the
first 8 rows and leaves the rest unwritten (`mismatch`)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

batch_size = 8
dim = 300


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_sum_kernel[(batch_size,)](x, out, dim, x.stride(0), BLOCK=triton.next_power_of_2(dim))
        return out
