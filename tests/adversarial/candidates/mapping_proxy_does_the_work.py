"""A types.MappingProxyType (a C type holding no Python) over a mapping whose __getitem__ is Python and
writes the answer with NumPy when the kernel indexes the proxy: host code inside an own launch. Found while
hunting false positives; closed by guards._plain_layout."""

import types

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Work:
    def __init__(self, a, b, out):
        self.args = (a, b, out)

    def __getitem__(self, key):
        a, b, out = self.args
        out.copy_(torch.from_numpy(np.add(a.cpu().numpy(), b.cpu().numpy())))
        return 0

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


@triton.jit
def idle_kernel(a_ptr, out_ptr, n, M: tl.constexpr, BLOCK: tl.constexpr):
    M[0]
    offsets = tl.arange(0, BLOCK)
    tl.load(a_ptr + offsets, mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        idle_kernel[(1,)](a, out, a.numel(), M=types.MappingProxyType(Work(a, b, out)), BLOCK=16)
        return out
