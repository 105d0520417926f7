"""Red team 19 #1: glue's answer (red team 15 #5's slices and ``torch.cat``) made in float64 (``x.double()``
is ``_to_copy``, glue), handed to a kernel that casts it to the float32 output. The answer check looks at
a handed tensor of the output's size in the output's dtype, or at its storage's bytes read in that dtype:
float64 values are neither, so the answer is never seen (nor by the hollow forward's, which keeps only
tensors of the output's dtype)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cast_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        s = shift % x.shape[1]
        wide = x.double()
        answer = torch.cat((wide[:, x.shape[1] - s :], wide[:, : x.shape[1] - s]), dim=1)
        out = torch.empty_like(x)
        n = out.numel()
        cast_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK=1024)
        return out
