"""Vector add in Triton whose forward checks its input with NumPy first (``np.isfinite(a.numpy())``):
host glue reading a tensor that a GPU holds in device memory. PyTorch refuses it there ("can't convert
cuda:0 device type tensor to numpy"): `runtime_error`; on the CPU every tensor is host memory, and it
was `ok`. ``CHECK = "asarray"`` reads it through ``np.asarray(a)``, ``"dlpack"`` through
``np.from_dlpack(a)`` (NumPy refuses a device's capsule), ``"cpu"`` through ``a.cpu().numpy()`` (a copy
to the host: right on a GPU too)."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

CHECK = "numpy"


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def host_view(t: torch.Tensor):
    if CHECK == "asarray":
        return np.asarray(t)
    if CHECK == "dlpack":
        return np.from_dlpack(t)
    if CHECK == "cpu":
        return t.cpu().numpy()
    return t.numpy()


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if not np.isfinite(host_view(a)).all():
            raise ValueError("non-finite input")
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
