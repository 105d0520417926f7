import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def broadcast_add_kernel(
    x_ptr,
    bias_ptr,
    out_ptr,
    rows,
    cols,
    stride_xr,
    stride_xc,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * stride_xr + c[None, :] * stride_xc, mask=mask)
    b = tl.load(bias_ptr + c, mask=c < cols)
    tl.store(out_ptr + r[:, None] * cols + c[None, :], x + b[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        bias = bias.contiguous()
        out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(rows, 64), triton.cdiv(cols, 64))
        broadcast_add_kernel[grid](x, bias, out, rows, cols, x.stride(0), x.stride(1), BLOCK_R=64, BLOCK_C=64)
        return out
