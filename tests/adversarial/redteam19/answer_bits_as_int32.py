"""Red team 19 #4 (dtype reinterpretation): glue's answer's bits handed as int32 (``.view(torch.int32)``),
copied by a kernel into the output's bits (``out.view(torch.int32)``): the kernel moves bytes of another
dtype, the answer is a view of them. The answer check reads a handed storage's bytes in the output's
dtype (red team 16 #1b), so this is caught."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        s = shift % x.shape[1]
        answer = torch.cat((x[:, x.shape[1] - s :], x[:, : x.shape[1] - s]), dim=1)
        bits = answer.view(torch.int32)
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](bits, out.view(torch.int32), n, BLOCK=1024)
        return out
