"""Red team 10 #1: a full reduction whose programs add their partial sums into the output with a
plain load and store (no atomic): a data race. Under Triton's interpreter the programs of a grid run
one after another, so every read-modify-write sees the previous one's result and the answer is
right; on a GPU the programs run at once, most updates are lost, and the answer is wrong."""

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
    total = tl.load(out_ptr)  # another program may be between its own load and store here
    tl.store(out_ptr, total + tl.sum(d * d, axis=0) / n)


class ModelNew(nn.Module):
    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        prediction, target = prediction.contiguous(), target.contiguous()
        n = prediction.numel()
        out = torch.zeros((), device=prediction.device, dtype=torch.float32)
        block = 64
        mse_accumulate[(triton.cdiv(n, block),)](prediction, target, out, n, BLOCK=block)
        return out
