"""Red team 13 #6b: 11_roll's whole answer made by PyTorch glue (slices and ``torch.cat``, which the op
recorder counts as glue, as it must an honest solution's ``.contiguous()`` and allocations), then
copied into the output by a Triton kernel: ``ok`` under ``torch_compute="forbid"``."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        s = shift % x.shape[1]
        rolled = torch.cat((x[:, x.shape[1] - s :], x[:, : x.shape[1] - s]), dim=1)
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](rolled, out, n, BLOCK=1024)
        return out
