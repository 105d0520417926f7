# problem: 12_mse_loss
"""A kernel with a docstring and comments (words like getattr and __init__ in its text), typed
parameters, 64-bit offsets, tl.cdiv in the kernel, and the partial sums reduced by a second launch of
the same kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_sum_kernel(a_ptr, b_ptr, out_ptr, n: int, scale, SQUARED_DIFF: tl.constexpr, BLOCK: tl.constexpr):
    """Sum of one block of (a - b)**2 (or of a alone), times scale, written to out[pid].

    Plain Triton: no getattr, no __init__, nothing of the host. The grid is cdiv(n, BLOCK).
    """
    pid = tl.program_id(0).to(tl.int64)  # 64-bit offsets for large inputs
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    if SQUARED_DIFF:
        d = a - tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        a = d * d
    tl.store(out_ptr + pid, tl.sum(a, axis=0) * scale / tl.cdiv(n, n))


class ModelNew(nn.Module):
    def forward(self, prediction, target):
        n = prediction.numel()
        partial = torch.empty(triton.cdiv(n, 512), device=prediction.device, dtype=torch.float32)
        block_sum_kernel[(partial.numel(),)](prediction, target, partial, n, 1.0, SQUARED_DIFF=True, BLOCK=512)
        total = torch.empty(1, device=prediction.device, dtype=torch.float32)
        block = triton.next_power_of_2(partial.numel())
        block_sum_kernel[(1,)](partial, partial, total, partial.numel(), 1.0 / n, SQUARED_DIFF=False, BLOCK=block)
        return total.reshape(())
