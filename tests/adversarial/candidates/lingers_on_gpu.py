"""Exploit: leave a kernel running on the GPU outside forward (started in the constructor, on a
stream of its own) so that the judge's own work is time-sliced with it and the reference looks
slow; forward itself is an honest Triton add (GPU)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def spin_kernel(ptr, rounds):
    acc = tl.load(ptr)
    for _ in range(rounds):
        for _ in range(1 << 20):
            acc = acc * 0.999999 + 1e-6
    tl.store(ptr, acc)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scratch = torch.zeros(1, device="cuda")
        self.stream = torch.cuda.Stream()
        with torch.cuda.stream(self.stream):
            spin_kernel[(1,)](self.scratch, 2000)

    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
