"""Red team 19 #12: red team 16 #1's route (a buffer handed to a kernel that does nothing, then given
glue's answer by ``copy_``, handed to a copy kernel) with the ``copy_`` run while every Python dispatch
mode is off (#11's re-export): the op recorder's ``moved`` hook never sees the write, so the record of
what the first launch left in the buffer stands. The record's check (its bytes, taken again when the
buffer is handed) still tells that glue wrote there since."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch._library import fake_class_registry


@triton.jit
def nothing_kernel(ptr):
    pass


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        cols = x.shape[1]
        s = shift % cols
        buf = torch.empty_like(x)
        nothing_kernel[(1,)](buf)
        answer = torch.cat((x[:, cols - s :], x[:, : cols - s]), dim=1)
        with fake_class_registry._disable_current_modes():
            buf.copy_(answer)
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](buf, out, out.numel(), BLOCK=1024)
        return out
