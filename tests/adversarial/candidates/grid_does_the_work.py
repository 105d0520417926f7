"""A grid callable that writes the answer with NumPy beside a kernel that writes nothing: the grid is
forward's host code, run in the hollow forward too (after the launch's poison), so the output does
not depend on the kernel."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def idle_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(a_ptr + offsets, mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)

        def grid(meta):
            out.copy_(torch.from_numpy(np.add(a.cpu().numpy(), b.cpu().numpy())))
            return (triton.cdiv(a.numel(), meta["BLOCK"]),)

        idle_kernel[grid](a, b, out, a.numel(), BLOCK=256)
        return out
