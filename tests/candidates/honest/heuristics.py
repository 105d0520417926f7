# problem: 01_vector_add
"""@triton.heuristics deriving constexprs from the arguments (an EVEN flag, the block size)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics(
    {
        "BLOCK": lambda args: min(1024, triton.next_power_of_2(args["n"])),
        "EVEN": lambda args: args["n"] % min(1024, triton.next_power_of_2(args["n"])) == 0,
    }
)
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(a_ptr + offsets) + tl.load(b_ptr + offsets))
    else:
        mask = offsets < n
        a = tl.load(a_ptr + offsets, mask=mask)
        b = tl.load(b_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, a + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        n = out.numel()
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, n)
        return out
