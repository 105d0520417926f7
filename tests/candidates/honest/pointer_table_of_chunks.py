# problem: 02_silu
"""A pointer table of more than 64 addresses (``handed.TABLES`` reads one of at most 64): the address of
every 8-element chunk of the input (``data_ptr()`` plus an offset, as a grouped kernel's table of its
operands), each program loading its chunk's pointer from the table. The input is read at addresses the
launch was not handed as tensors: on the CPU that memory is looked at (red team 19 #15), and it holds the
input, not the answer."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

CHUNK = 8


@triton.jit
def silu_kernel(table_ptr, out_ptr, CHUNK: tl.constexpr):
    chunk = tl.program_id(0)
    x_ptr = tl.load(table_ptr + chunk).to(tl.pointer_type(tl.float32))
    offsets = tl.arange(0, CHUNK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + chunk * CHUNK + offsets, x / (1.0 + tl.exp(-x)))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        assert n % CHUNK == 0
        base, width = x.data_ptr(), x.element_size()
        table = torch.tensor([base + i * width for i in range(0, n, CHUNK)], dtype=torch.int64, device=x.device)
        silu_kernel[(n // CHUNK,)](table, out, CHUNK=CHUNK)
        return out
