"""Red team 10 #1b: program 0 zeroes the output and every program then adds its partial sum with
an atomic add. Under the interpreter program 0 always runs first; on a GPU it may run after others
have added theirs, and its plain store wipes them out."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_atomic(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(out_ptr, 0.0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0) / n)


class ModelNew(nn.Module):
    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        prediction, target = prediction.contiguous(), target.contiguous()
        n = prediction.numel()
        out = torch.empty((), device=prediction.device, dtype=torch.float32)
        block = 64
        mse_atomic[(triton.cdiv(n, block),)](prediction, target, out, n, BLOCK=block)
        return out
