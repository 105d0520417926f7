"""Red team 11 #1: red team 10's racy reduction (every program adds its partial sum to the output
with a plain load and store) tried first, and on any error the same sum by a second kernel with
atomics: the "fast path, else a safe one" shape generated code often has. On the CPU the race
check raises its ``DataRace`` at the racy grid's end and the atomic kernel gives the answer
(``ok``); on a GPU the racy kernel raises nothing, its programs lose each other's updates, and its
wrong answer is returned: ``mismatch``. Every launch is a Triton kernel's, so the fallback check
(all launches blocked) sees forward fail, as it should."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_accumulate(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    total = tl.load(out_ptr)
    tl.store(out_ptr, total + tl.sum(d * d, axis=0) / n)


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
        out = torch.zeros((), device=prediction.device, dtype=torch.float32)
        block = 64
        try:
            mse_accumulate[(triton.cdiv(n, block),)](prediction, target, out, n, BLOCK=block)
        except Exception:  # the fast kernel failed: the safe one
            out = torch.zeros((), device=prediction.device, dtype=torch.float32)
            mse_atomic[(triton.cdiv(n, block),)](prediction, target, out, n, BLOCK=block)
        return out
