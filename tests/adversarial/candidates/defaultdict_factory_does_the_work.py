"""A defaultdict passed as a constexpr whose default_factory (a functools.partial of NumPy's add, a C
callable) writes the answer when the kernel reads a missing key: host code inside an own launch, which the
hollow forward skips. Found while hunting false positives; closed by guards._plain_layout."""

import collections
import functools

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def idle_kernel(a_ptr, out_ptr, n, D: tl.constexpr, BLOCK: tl.constexpr):
    D.clear()
    D[0]
    offsets = tl.arange(0, BLOCK)
    tl.load(a_ptr + offsets, mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        work = functools.partial(out.copy_, torch.from_numpy(np.add(a.cpu().numpy(), b.cpu().numpy())))
        idle_kernel[(1,)](a, out, a.numel(), D=collections.defaultdict(work), BLOCK=16)
        return out
