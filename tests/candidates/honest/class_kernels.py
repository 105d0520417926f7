# problem: 05_layernorm
"""Kernels held as class attributes and a staticmethod launcher, reached through self; nn.Module
state (the LayerNorm's parameters, a buffer) passed to the kernel; eps from a module attribute."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Kernels:
    @staticmethod
    @triton.jit
    def layernorm(x_ptr, w_ptr, b_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / n_cols
        diff = tl.where(mask, x - mean, 0.0)
        var = tl.sum(diff * diff, axis=0) / n_cols
        y = diff / tl.sqrt(var + eps)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(out_ptr + row * stride + cols, y * w + b, mask=mask)


class ModelNew(nn.Module):
    kernel = _Kernels.layernorm

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.register_buffer("block", torch.tensor(triton.next_power_of_2(dim)), persistent=False)

    @staticmethod
    def _launch(kernel, x, norm, block):
        out = torch.empty_like(x)
        kernel[(x.shape[0],)](x, norm.weight, norm.bias, out, x.stride(0), x.shape[1], norm.eps, BLOCK=block)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.view(-1, shape[-1]).contiguous()
        return self._launch(self.kernel, x, self.norm, int(self.block.item())).reshape(shape)
