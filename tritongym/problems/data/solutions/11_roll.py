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
    x = tl.load(x_ptr + row * stride_row + source, mask=mask)
    tl.store(out_ptr + row * stride_row + cols, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        grid = (rows, triton.cdiv(cols, 1024))
        roll_kernel[grid](x, out, cols, shift, x.stride(0), BLOCK=1024)
        return out
