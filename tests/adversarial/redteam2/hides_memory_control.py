"""Control for hides_memory_in_shmem.py: the same 2.5 GiB held as an ordinary tensor (memory_limit_mb=1536)
is refused (out_of_memory), as it should be."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

HELD = []


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not HELD:
            HELD.append(torch.ones(5 << 27))  # 2.5 GiB of float32, touched
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
