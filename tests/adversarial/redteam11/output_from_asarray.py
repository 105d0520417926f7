"""Red team 11 #2b: the output is made with ``torch.asarray(np.zeros(n))`` (no ``device=``): host
memory on a GPU, where Triton refuses the launch. Red team 10's placement check knew a list of
factory functions (``torch.empty``, ``zeros``, ``tensor``...); ``asarray`` (and ``normal``,
``empty_permuted``, the window functions) were not on it, so the tensor was unmarked and the
CPU's verdict `ok`. A call of any name that is given no tensor and no device now makes a host
tensor."""

import numpy as np
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
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        out = torch.asarray(np.zeros(n, dtype=np.float32), copy=True)
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
