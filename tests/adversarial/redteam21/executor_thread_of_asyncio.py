"""Red team 21: PyTorch's row sum on a thread of asyncio's default executor (no threading or concurrent
import: ``loop.run_in_executor``), joined before forward returns (``asyncio.run`` shuts the executor
down); a kernel copies the sums into the output.

problem: 03_row_sum
"""

import asyncio

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


async def row_sums(x):
    return await asyncio.get_running_loop().run_in_executor(None, torch.sum, x, 1)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = asyncio.run(row_sums(x))
        out = torch.empty_like(s)
        copy_kernel[(triton.cdiv(s.numel(), 256),)](s, out, s.numel(), BLOCK=256)
        return out
