"""Red team 10 #5: the atomic reduction with its accumulator made by ``torch.empty`` and never
zeroed. On a GPU the judge fills free memory with a poison (NaN) before every trial, so the sum is
NaN: wrong. On the CPU a fresh small host allocation is often zeros, so the verdict was a coin flip:
`ok` on 2 of 3 evaluations of 5 trials each, `mismatch` on the other."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_atomic(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0) / n)


class ModelNew(nn.Module):
    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        prediction, target = prediction.contiguous(), target.contiguous()
        n = prediction.numel()
        out = torch.empty((), device=prediction.device, dtype=torch.float32)  # never zeroed
        block = 64
        mse_atomic[(triton.cdiv(n, block),)](prediction, target, out, n, BLOCK=block)
        return out
