import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chain_mean_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
        s = tl.load(scale_ptr + cols, mask=mask, other=0.0)
        b = tl.load(bias_ptr + cols, mask=mask, other=0.0)
        t = 2.0 * tl.sigmoid(2.0 * x * s) - 1.0  # tanh
        y = tl.minimum(tl.maximum(t + b, -0.5), 1.0)
        acc += tl.where(mask, y, 0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        block = min(triton.next_power_of_2(cols), 2048)
        chain_mean_kernel[(rows,)](x, self.scale, self.bias, out, cols, x.stride(0), BLOCK=block)
        return out
