# problem: 02_silu
"""A @triton.jit helper called from the kernel, and one passed to it as a constexpr argument."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _silu(x):
    return x * _sigmoid(x)


@triton.jit
def _apply(x, ACTIVATION: tl.constexpr):
    return ACTIVATION(x)


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = _apply(x, ACTIVATION)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 256),)](x, out, n, ACTIVATION=_silu, BLOCK=256)
        return out
