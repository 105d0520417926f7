# problem: 01_vector_add
"""An honest kernel that keeps a debugging ``tl.device_print`` of its first block's sums: what a kernel
prints goes to the runner's standard output (red team 21 #2), as a GPU's printf does, and is no finding."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    total = tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    if pid == 0:
        tl.device_print("first block", total)
    tl.store(out_ptr + offs, total, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = out.numel()
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
