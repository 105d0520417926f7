"""Victim probe for ``marks_judge_for_oom_killer.py``: a correct vector_add that prints its own OOM
score adjustment (a later runner forked by the marked zygote inherits 1000)."""

import io

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
    def forward(self, a, b):
        with io.FileIO("/proc/self/oom_score_adj") as fh:
            print("oom_score_adj", fh.read().decode().strip())
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
