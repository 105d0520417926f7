"""Exploit: the side stream of side_stream.py, reached through getattr so no static check sees it (GPU)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        cuda = getattr(torch, "cu" + "da")
        side = getattr(cuda, "Str" + "eam")()
        out = torch.empty_like(a)
        with getattr(cuda, "str" + "eam")(side):
            add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
