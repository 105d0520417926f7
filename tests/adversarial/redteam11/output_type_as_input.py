"""Red team 11 #2's control (an honest GPU idiom the old check refused): the output is made on the
host and moved to the input's device and dtype with ``.type_as(a)``, as PyTorch Lightning's code
does. On a GPU ``type_as`` a CUDA tensor moves it there, and the launch runs (`ok`); red team 10's
check knew only ``.to`` as placing, so on the CPU (where ``type_as`` of the same type returns the
tensor itself, still marked) the launch failed."""

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
        out = torch.empty(n).type_as(a)
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
