"""Red team 19 #2: glue's answer handed transposed (``torch.cat`` of the slices, then
``.t().contiguous()``, glue), to a kernel that transposes it back into the output. A handed tensor of
the output's size is read in its own element order, which is the answer's transpose: the answer is never
seen (nor by the hollow forward's, which reads the same order)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(src_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < rows * cols
    r = offsets // cols
    c = offsets % cols
    tl.store(out_ptr + offsets, tl.load(src_ptr + c * rows + r, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        rows, cols = x.shape
        s = shift % cols
        answer = torch.cat((x[:, cols - s :], x[:, : cols - s]), dim=1).t().contiguous()
        out = torch.empty_like(x)
        transpose_kernel[(triton.cdiv(rows * cols, 1024),)](answer, out, rows, cols, BLOCK=1024)
        return out
