# problem: 01_vector_add
"""The output buffer held by a small workspace object of the solution's own (not a module, not a
container), rewritten in full by the kernel at every call (hack_no_triton before honest4's fix of the
hollow forward)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class _Workspace:
    def __init__(self):
        self.out = None

    def get(self, like):
        if self.out is None or self.out.shape != like.shape:
            self.out = torch.empty_like(like)
        return self.out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ws = _Workspace()

    def forward(self, a, b):
        out = self.ws.get(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
