# problem: 01_vector_add
"""Output buffers cached in a class attribute (a dict keyed by shape, dtype and device, shared by every
instance), rewritten in full by the kernel at every call. The hollow forward took the buffer, which
held the last call's answer for these very inputs, for one forward made (hack_no_triton) until it
looked for what forward left as it was wherever a tensor is kept (honest4)."""

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
    _buffers_by_shape = {}

    def forward(self, a, b):
        key = (a.shape, a.dtype, a.device)
        out = ModelNew._buffers_by_shape.get(key)
        if out is None:
            out = ModelNew._buffers_by_shape[key] = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
