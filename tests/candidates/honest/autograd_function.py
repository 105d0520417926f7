# problem: 02_silu
"""The kernel wrapped in a torch.autograd.Function (forward launches it, backward launches another),
as training libraries write it; the module calls Function.apply."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_fwd_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * tl.sigmoid(x), mask=mask)


@triton.jit
def silu_bwd_kernel(x_ptr, grad_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.sigmoid(x)
    tl.store(out_ptr + offsets, tl.load(grad_ptr + offsets, mask=mask) * s * (1 + x * (1 - s)), mask=mask)


class SiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_fwd_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        grad = grad.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_bwd_kernel[(triton.cdiv(n, 256),)](x, grad, out, n, BLOCK=256)
        return out


class ModelNew(nn.Module):
    def forward(self, x):
        return SiLU.apply(x)
