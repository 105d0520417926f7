"""Red team 18 #1b: glue's answer (red team 15 #5's slices and ``torch.cat``, behind a probe kernel's
flag) made the kernels' work by handing a launch a strided view that spans it: after a launch,
``handed.FirstHanded`` records what it left over each handed view's extent in its storage, while
before it looks only at the output-sized regions that start or end that extent. The answer sits
inside a larger buffer, one element of padding either side; a two-element view of the padding's
first and last elements, handed to a kernel that does nothing, spans the answer without starting or
ending it, and the copy kernel that then moves the answer into the output is handed the kernels' work."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


@triton.jit
def nothing_kernel(ptr):
    pass


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        s = shift % x.shape[1]
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        flag_kernel[(1,)](flag)
        n = x.numel()
        buffer = torch.zeros(n + 2, dtype=x.dtype, device=x.device)
        if int(flag.item()) == 1:
            buffer[1 : n + 1].copy_(torch.cat((x[:, x.shape[1] - s :], x[:, : x.shape[1] - s]), dim=1).view(-1))
        nothing_kernel[(1,)](buffer[:: n + 1])
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(n, 1024),)](buffer[1 : n + 1], out, n, BLOCK=1024)
        return out
