"""Red team 13 #4: a tensor made with ``device="cpu"`` written out. The CPU judge's placement check
(placement.py) marked what a factory makes on no device (the host on a GPU), and took any device
given as placed: ``torch.empty(n, device="cpu")`` is host memory on a GPU too, where Triton refuses
the launch, and was ``ok`` on the CPU, where a policy trained there sees ``cpu`` everywhere.

``ROUTE``: ``forward`` (the output made with ``device="cpu"``), ``like`` (``empty_like(a,
device="cpu")``), ``constructor`` (a scale table made so in ``__init__``, a plain attribute: the
runner's ``model.to(device)`` does not move it); honest counterparts, placed on a GPU: ``type``
(``device=a.device.type``), ``to_type`` (``.to(a.device.type)``, which red team 12's rule for
``.to("cpu")`` took for the host), ``device`` (``device=a.device``) and ``buffer`` (the constructor's table
registered as a buffer, which ``model.to`` moves)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROUTE = "forward"


@triton.jit
def scaled_add_kernel(a_ptr, b_ptr, scale_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    scale = tl.load(scale_ptr)
    tl.store(out_ptr + offsets, (a + b) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if ROUTE == "constructor":
            self.scale = torch.ones(1, device="cpu")
        elif ROUTE == "buffer":
            self.register_buffer("scale", torch.ones(1, device="cpu"))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        scale = self.scale if ROUTE in ("constructor", "buffer") else torch.ones(1, device=a.device)
        if ROUTE == "forward":
            out = torch.empty(a.shape, dtype=a.dtype, device="cpu")
        elif ROUTE == "like":
            out = torch.empty_like(a, device="cpu")
        elif ROUTE == "type":
            out = torch.empty(a.shape, dtype=a.dtype, device=a.device.type)
        elif ROUTE == "to_type":
            out = torch.empty_like(a).to(a.device.type)
        else:
            out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
        n = a.numel()
        scaled_add_kernel[(triton.cdiv(n, 1024),)](a, b, scale, out, n, BLOCK=1024)
        return out
