# problem: 09_rmsnorm_fp16
"""An fp16 problem computed in fp32: the input upcast on the host (.float()), the weight by
.float(), the result cast back with .to(x.dtype) (casts are glue); @triton.autotune over num_warps
with restore_value on the output."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=["n_cols"], restore_value=["out_ptr"])
@triton.jit
def rms_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    var = tl.sum(x * x, axis=0) / n_cols
    y = (x * tl.rsqrt(var + eps)).to(tl.float16).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, y * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim, dtype=torch.float16))
        self.eps = eps

    def forward(self, x):
        xf = x.float().contiguous()
        out = torch.empty_like(xf)
        rows, n_cols = xf.shape
        rms_kernel[(rows,)](xf, self.weight.float(), out, n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols))
        return out.to(x.dtype)
