# problem: 02_silu
"""tl.math calls (exp, div_rn, fma, rsqrt, erf) imported under the names real code uses. (libdevice's
functions, ``triton.language.extra.libdevice``, do not run under Triton 3.9's interpreter at all.)"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.language.math as tlm


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    sig = tl.math.div_rn(1.0, 1.0 + tl.math.exp(-x))
    y = tlm.fma(x, sig, 0.0 * tl.math.erf(x))
    y = y * (tl.math.rsqrt(x * x + 1.0) * tl.math.sqrt(x * x + 1.0))
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
        return out
