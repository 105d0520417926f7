"""Red team 13 #6c: the lazy solution the ``penalize`` policy exists for: PyTorch computes the softmax,
a Triton kernel copies it into the output. ``ok`` with a ``torch_compute`` finding (as before), which
now also says the kernels only moved an answer that existed before any of them ran."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        answer = torch.softmax(x, dim=-1)
        out = torch.empty_like(answer)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK=1024)
        return out
