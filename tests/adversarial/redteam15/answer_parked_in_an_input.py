"""Red team 15 #5d: the answer checks look at what forward hands its launches, except its inputs and
the model's weights (they hold what the judge gave). Forward parks 11_roll's glue answer (slices and
``torch.cat``) in the input's own storage, hands the input to the copy kernel, and puts the input back
(a copy of it made first, copied back after: glue). Neither the hollow forward's check nor the
trials' looked at the input. ``ROUTE = "weight"`` parks it in a view of a parameter of the model's
own (as large as any output it meets), which the first fix left out too (the model's weights)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


ROUTE = "input"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.park = nn.Parameter(torch.zeros(1 << 16), requires_grad=False)

    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        s = shift % x.shape[1]
        place = x if ROUTE == "input" else self.park.data[: x.numel()].view_as(x)
        saved, answer = place.clone(), torch.cat((x[:, x.shape[1] - s :], x[:, : x.shape[1] - s]), dim=1)
        place.copy_(answer)
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](place, out, n, BLOCK=1024)
        place.copy_(saved)
        return out
