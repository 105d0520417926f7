"""Red team 19 #10: glue's answer made as two pieces in storages of their own (the top rows and the
bottom rows, each one ``torch.cat`` of the input's slices), each handed to a kernel that copies it into
its half of the output. Neither piece holds an output's worth of bytes, so no region of either is
looked at (red team 16 #1b read pieces inside one storage only)."""

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
        rows, cols = x.shape
        s = shift % cols
        half = rows // 2
        out = torch.empty_like(x)
        for part in (slice(0, half), slice(half, rows)):
            piece = torch.cat((x[part, cols - s :], x[part, : cols - s]), dim=1)
            copy_kernel[(triton.cdiv(piece.numel(), 1024),)](piece, out[part], piece.numel(), BLOCK=1024)
        return out
