"""Red team 10 #3b: a tensor made at import (a module global) without ``device=``, passed to the
kernel in forward: host memory on a GPU, where Triton refuses the launch; on the CPU it was `ok`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SCALE = torch.ones(1)  # made at import, without a device: host memory on a GPU


@triton.jit
def add_kernel(a_ptr, b_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    s = tl.load(s_ptr)
    total = tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, s * total, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, SCALE, out, a.numel(), BLOCK=256)
        return out
