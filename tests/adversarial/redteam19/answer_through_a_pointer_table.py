"""Red team 19 #14: #13 past its fix: glue's answer's address put in a one-element int64 tensor (a pointer
table, as Triton's grouped GEMM keeps one), which the copy kernel loads and casts to a pointer. The
integers a launch is handed are looked up as addresses; a table's are not, unless read."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    src = tl.load(table_ptr).to(tl.pointer_type(tl.float32))
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        cols = x.shape[1]
        s = shift % cols
        answer = torch.cat((x[:, cols - s :], x[:, : cols - s]), dim=1)
        table = torch.tensor([answer.data_ptr()], dtype=torch.int64, device=x.device)
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](table, out, n, BLOCK=1024)
        return out
