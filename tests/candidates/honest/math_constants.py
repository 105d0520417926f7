# problem: 07_scale_tanh_clamp_mean
"""Module-level constexpr constants computed with math.*, math.* read in the kernel, tanh written
with exp2 and log2(e), and parameters of the module passed to the kernel."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E: tl.constexpr = tl.constexpr(math.log2(math.e))
CLAMP_LO = tl.constexpr(-0.5)
CLAMP_HI = tl.constexpr(1.0)


@triton.jit
def _tanh(x):
    e = tl.exp2(tl.abs(x) * (-2.0 * LOG2E))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x >= 0, t, -t)


@triton.jit
def fused_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        s = tl.load(scale_ptr + cols, mask=mask, other=0.0)
        b = tl.load(bias_ptr + cols, mask=mask, other=0.0)
        y = tl.minimum(tl.maximum(_tanh(x * s) + b, CLAMP_LO), CLAMP_HI)
        acc += tl.where(mask, y, 0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols + 0.0 * math.pi)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        fused_kernel[(x.shape[0],)](x, self.scale, self.bias, out, x.stride(0), x.shape[1], BLOCK=64)
        return out
