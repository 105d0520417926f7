"""Honest addition that reads its process's address-space limit at every call: at the second size
(``n`` other than the shown 1000) the limit must have grown with the size drawn (the judge's ``Build``
of the second model sets it), else it raises."""

import resource

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEEN = []


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if a.numel() == 1000:
            SEEN.append(limit)
        elif not SEEN or limit <= max(SEEN):
            raise RuntimeError(f"the limit did not grow: {limit} after {SEEN}")
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
