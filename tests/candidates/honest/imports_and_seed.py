# problem: 01_vector_add
"""Imports real solutions carry (triton.testing, torch.nn.functional, torch.nn.init, numpy,
typing, math, functools, warnings), a seed set at import and in __init__, warnings silenced, logging."""

import functools
import logging
import math
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401
import torch.nn.init as init
import triton
import triton.language as tl
import triton.testing

warnings.filterwarnings("ignore", category=UserWarning)
logger = logging.getLogger(__name__)
torch.manual_seed(0)
np.random.seed(0)


@functools.cache
def _block_for(n: int) -> int:
    return min(1024, max(16, 1 << math.ceil(math.log2(max(n, 1)))))


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float | None = None):
        super().__init__()
        torch.manual_seed(1234)
        self.unused = nn.Parameter(torch.empty(4))
        init.zeros_(self.unused)

    def forward(self, a, b):
        n = a.numel()
        block = _block_for(n)
        out = torch.empty_like(a)
        logger.debug("launching %d blocks", triton.cdiv(n, block))
        add_kernel[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block)
        return out
