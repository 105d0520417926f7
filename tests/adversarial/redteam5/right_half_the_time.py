"""Red team 5 #5: a kernel that is right on half of its evaluations, a stand-in for a race between
blocks or a bug that only some inputs show. Evaluated through the service (``HttpEnv``, as the RL
integrations use it with ``TRITONGYM_ENV=http://...``), its first verdict was served from the
content-addressed cache to every later submission of the same text: once lucky, `ok` for ever."""

import random

import torch
import torch.nn as nn
import triton
import triton.language as tl

LUCKY = random.SystemRandom().random() < 0.5  # drawn once per evaluation (per runner)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, wrong, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    total = tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, total + wrong, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), 0.0 if LUCKY else 1.0, BLOCK=256)
        return out
