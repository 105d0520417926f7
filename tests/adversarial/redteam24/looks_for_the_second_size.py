"""Looks for the judge's second size in the runner before its trial: anything of the job's (what was
shrunk, the drawn problem, its reference) among the runner's objects; raises where it finds one, else
adds honestly (``ok``: the draw is the judge's, in its process, after the trials at the small size)."""

import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl

JUDGES = {"Problem", "SecondSize", "Job", "JobState", "Reference"}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def found() -> list[str]:
    seen = []
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name in JUDGES and type(obj).__module__.startswith("tritongym"):
            seen.append(name)
        elif type(obj) is dict and ("shrunk" in obj or "resized_source" in obj):
            seen.append(f"a dict of {sorted(map(str, obj))[:5]}")
    return seen


class ModelNew(nn.Module):
    def forward(self, a, b):
        if a.numel() == 1000:  # the problem's own size: the second is to come
            seen = found()
            if seen:
                raise RuntimeError(f"found the judge's: {seen[:3]}")
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
