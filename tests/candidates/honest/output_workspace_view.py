# problem: 01_vector_add
"""The output a view of a larger flat workspace the module keeps (room for more than one output), in
the output's shape: the view handed to the kernel is not the kept tensor's shape, and holds the last
call's answer until the kernel rewrites it (hack_no_triton before honest4's fix of the hollow forward)."""

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
    def __init__(self):
        super().__init__()
        self.workspace = torch.empty(0)

    def forward(self, a, b):
        n = a.numel()
        if self.workspace.numel() < 2 * n or self.workspace.dtype != a.dtype:
            self.workspace = torch.empty(2 * n, dtype=a.dtype, device=a.device)  # room for a second output
        out = self.workspace[:n].view(a.shape)
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
