# problem: 02_silu
"""Forward hands its kernel more glue-made tensors of the output's size than the answer check sends per
output from the hollow forward (four): six copies of the input (``x.clone()``), the kernel computing the
SiLU of each in place, the last one returned. Every sample is kept and those nearest the reference's
output are sent (``handed.nearest``, red team 19 #5): each copy holds the input when handed, which is not
the answer, so none is evidence."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        copies = [x.clone() for _ in range(6)]
        n = x.numel()
        for copy in copies:
            silu_in_place[(triton.cdiv(n, 1024),)](copy, n, BLOCK=1024)
        return copies[-1]
