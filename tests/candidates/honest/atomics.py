# problem: 12_mse_loss
"""A reduction by tl.atomic_add into a zero-initialised output, @triton.autotune with one Config,
reset_to_zero and a pre_hook, forward under @torch.no_grad()."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _zero_out(nargs):
    nargs["out_ptr"].zero_()


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}, num_warps=4, pre_hook=_zero_out)],
    key=["n"],
    reset_to_zero=["out_ptr"],
)
@triton.jit
def mse_kernel(p_ptr, t_ptr, out_ptr, n, inv_n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0) * inv_n)


class ModelNew(nn.Module):
    @torch.no_grad()
    def forward(self, prediction, target):
        n = prediction.numel()
        out = torch.zeros((), device=prediction.device, dtype=torch.float32)
        mse_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](prediction, target, out, n, 1.0 / n)
        return out
