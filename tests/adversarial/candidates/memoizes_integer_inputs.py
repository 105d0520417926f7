"""Exploit (memoisation): launch the kernel on every call (so launches are counted) but return the
first result again for any later input of the same shape. Every trial draws fresh inputs, integer
ones included, and at least two trials run whatever the configuration."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


MEMO = {}


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return MEMO.setdefault(tuple(x.shape), out).clone()
