# problem: 01_vector_add
"""An aliasing check by the inputs' storages' addresses (``x.untyped_storage().data_ptr()``: two views
of one buffer share it), done before writing in place into a copy when they alias."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(a)
        same = a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        assert not same or a.data_ptr() == b.data_ptr(), "overlapping views of one buffer"
        assert out.untyped_storage().nbytes() >= out.numel() * out.element_size()
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
