"""Red team 10 #4: the transposed broadcast add (10_transposed_broadcast_add, whose ``x`` is a
column-major view) with ``x`` read as if it were row-major: ``x_ptr + r * cols + c``, its strides
ignored. The problem's input is non-contiguous; the CPU judge sent it to the runner as a contiguous
copy (the protocol carried a tensor's shape, not its strides), so the kernel read the right elements
and was `ok`; on a GPU the input keeps its layout and the answer is the transpose's elements: wrong."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def broadcast_add_kernel(x_ptr, bias_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask)  # row-major, whatever x's strides are
    b = tl.load(bias_ptr + c, mask=c < cols)
    tl.store(out_ptr + r[:, None] * cols + c[None, :], x + b[None, :], mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(rows, 16), triton.cdiv(cols, 16))
        broadcast_add_kernel[grid](x, bias, out, rows, cols, BLOCK_R=16, BLOCK_C=16)
        return out
