"""Red team 10 #3: the output is made with ``torch.empty(n)`` without ``device=``. Under the CPU judge
every tensor is on the host anyway, so the kernel writes it and the answer is right (`ok`); on a GPU
the inputs are on the device and this output is in host memory: Triton refuses to launch with it
("Pointer argument ... cannot be accessed from Triton (cpu tensor?)")."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        out = torch.empty(n, dtype=a.dtype)  # no device=: the host's memory on every machine
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
