"""Red team 19 #13: glue's answer (slices and ``torch.cat``) handed to the copy kernel as an integer, its
``data_ptr()``, which the kernel casts to a pointer (red team 15 #2b: such a cast of a device address
still names device memory, on a GPU as in the interpreter). The answer check samples the tensors a
launch is handed; an integer is none."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_address, out_ptr, n, BLOCK: tl.constexpr):
    src = src_address.to(tl.pointer_type(tl.float32))
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        cols = x.shape[1]
        s = shift % cols
        answer = torch.cat((x[:, cols - s :], x[:, : cols - s]), dim=1)
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer.data_ptr(), out, n, BLOCK=1024)
        return out
