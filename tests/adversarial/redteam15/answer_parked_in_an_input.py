"""Red team 15 #5d: the answer checks look at what forward hands its launches, except its inputs and
the model's weights (they hold what the judge gave). Forward parks 11_roll's glue answer (slices and
``torch.cat``) in the input's own storage, hands the input to the copy kernel, and puts the input back
(a copy of it made first, copied back after: glue). Neither the hollow forward's check nor the
trials' looked at the input."""

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
        saved = x.clone()
        x.copy_(torch.cat((saved[:, x.shape[1] - s :], saved[:, : x.shape[1] - s]), dim=1))
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        x.copy_(saved)
        return out
