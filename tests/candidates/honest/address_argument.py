# problem: 01_vector_add
"""A kernel handed its output as an address (``out.data_ptr()``, an integer it casts to a pointer) beside
its inputs as tensors. The memory reached through the address is looked at as a handed tensor is (red team
19 #13): the fresh output holds the poison, not the answer, and what the launch left there is the kernels'."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_address, n, BLOCK: tl.constexpr):
    out_ptr = out_address.to(tl.pointer_type(tl.float32))
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = out.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out.data_ptr(), n, BLOCK=1024)
        return out
