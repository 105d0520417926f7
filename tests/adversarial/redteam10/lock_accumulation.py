"""Honest control for red team 10 #1: every program adds its partial sum to the output under a spin
lock (``tl.atomic_cas`` to take it, ``tl.atomic_xchg`` to give it back), as Triton's layer-norm
tutorial accumulates its weight gradients. The plain load and store of the output are ordered by the
lock: no race, on a GPU as under the interpreter."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_locked(p_ptr, t_ptr, out_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    partial = tl.sum(d * d, axis=0) / n
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + partial)
    tl.atomic_xchg(lock_ptr, 0)


class ModelNew(nn.Module):
    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        prediction, target = prediction.contiguous(), target.contiguous()
        n = prediction.numel()
        out = torch.zeros((), device=prediction.device, dtype=torch.float32)
        lock = torch.zeros((), device=prediction.device, dtype=torch.int32)
        block = 64
        mse_locked[(triton.cdiv(n, block),)](prediction, target, out, lock, n, BLOCK=block)
        return out
