"""False positive (any mode): an honest vector_add whose kernel is made by a decorator factory of its
own (``@kernel()`` wraps ``triton.jit(f)``), a style of kernel libraries. The judge's static evidence
(evidence.source_kernels) finds no Triton kernel in the text and refuses it unrun as hack_no_triton."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def kernel(**options):
    def wrap(fn):
        return triton.jit(fn, **options)

    return wrap


@kernel()
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
