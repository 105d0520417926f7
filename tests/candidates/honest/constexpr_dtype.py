# problem: 09_rmsnorm_fp16
"""Constexpr branching on the pointer's dtype and on flags, a dict of torch dtypes to tl dtypes, and
getattr(tl, "...") lookups on the host and in the kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

TORCH_TO_TL = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}


@triton.jit
def rmsnorm_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    stride,
    n_cols,
    eps,
    OUT_DTYPE: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    if x_ptr.dtype.element_ty != tl.float32:
        x = x.to(getattr(tl, "float32"))  # noqa: B009
    var = tl.sum(x * x, axis=0) / n_cols
    y = (x * tl.rsqrt(var + eps)).to(OUT_DTYPE)
    if HAS_WEIGHT:
        y = y * tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, dtype=torch.float16))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        out_dtype = TORCH_TO_TL.get(x.dtype, getattr(tl, str(x.dtype).split(".")[-1]))
        rmsnorm_kernel[(x2.shape[0],)](
            x2,
            self.weight,
            out,
            x2.stride(0),
            x2.shape[1],
            self.eps,
            OUT_DTYPE=out_dtype,
            HAS_WEIGHT=True,
            BLOCK=triton.next_power_of_2(x2.shape[1]),
        )
        return out.view_as(x)
