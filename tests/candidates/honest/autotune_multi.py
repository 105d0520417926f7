# problem: 04_softmax
"""@triton.autotune over several triton.Config with key= and prune_configs_by, the grid a lambda of
meta['BLOCK_M'] (on the CPU each config runs once and the first is chosen: triton_compat)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _configs():
    return [triton.Config({"BLOCK_M": bm}, num_warps=w, num_stages=s) for bm in (1, 2, 4) for w, s in ((4, 2), (8, 3))]


def _prune(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK_M"] <= max(1, named_args["n_rows"])]


@triton.autotune(configs=_configs(), key=["n_rows", "n_cols"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def softmax_kernel(x_ptr, out_ptr, stride_x, stride_out, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=1)[:, None]
    num = tl.exp(x)
    den = tl.sum(num, axis=1)[:, None]
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], num / den, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n_rows, meta["BLOCK_M"]),)
        softmax_kernel[grid](x, out, x.stride(0), out.stride(0), n_rows, n_cols, BLOCK_N=triton.next_power_of_2(n_cols))
        return out
