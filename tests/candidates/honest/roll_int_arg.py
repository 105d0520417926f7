# problem: 11_roll
"""An integer argument of forward used on the host (modulo) and passed to the kernel; do_not_specialize."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["shift"])
def roll_kernel(x_ptr, out_ptr, stride, n_cols, shift, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    src = (cols - shift + n_cols) % n_cols
    tl.store(out_ptr + row * stride + cols, tl.load(x_ptr + row * stride + src, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, shift: int):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        roll_kernel[(rows, triton.cdiv(cols, 64))](x, out, x.stride(0), cols, shift % cols, BLOCK=64)
        return out
