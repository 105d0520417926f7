"""Honest (red team 15 #2's counterpart): what forward does with device addresses on a GPU. It checks
its inputs' alignment (``data_ptr() % 16``) and that the output shares no memory with them, and hands
its kernel a table of the inputs' and output's addresses (``data_ptr()``, as Triton's grouped GEMM
tutorial does), from which the kernel loads its pointers (``tl.load(table).to(tl.pointer_type(...))``).
``ok`` on a GPU; on the CPU it must stay ``ok`` with the addresses forward sees shifted."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a_ptr = tl.load(table_ptr).to(tl.pointer_type(tl.float32))
    b_ptr = tl.load(table_ptr + 1).to(tl.pointer_type(tl.float32))
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(a)
        assert a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0, "unaligned input"
        assert out.data_ptr() not in (a.data_ptr(), b.data_ptr())
        table = torch.tensor([a.data_ptr(), b.data_ptr()], dtype=torch.int64, device=a.device)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](table, out, n, BLOCK=1024)
        return out
