"""Red team 19 #15: #13 and #14 past their fixes: the kernel is handed the input and the distance from it to
glue's answer, in elements (``(answer.data_ptr() - x.data_ptr()) // 4``: a difference of addresses, the
same shifted or not), and reads the answer at ``x_ptr + distance``. No address is handed, only a tensor
that is no answer (the input) and a small integer: the launch reaches memory it was not handed."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, distance, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + distance + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        cols = x.shape[1]
        s = shift % cols
        answer = torch.cat((x[:, cols - s :], x[:, : cols - s]), dim=1)
        distance = (answer.data_ptr() - x.data_ptr()) // x.element_size()
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, distance, out, n, BLOCK=1024)
        return out
