"""Vector add whose output is a tensor ``set_`` on a legacy typed storage (``torch.FloatStorage(n)``):
a legacy storage class is host memory on every machine, so on a GPU ``set_`` of a device tensor on it
fails ("Expected a Storage of the same device"): `runtime_error`. ``TypedStorage`` makes its memory with
``torch.device("cpu")``, which the CPU's placement check could not tell from an input's device: `ok`.
``DEVICE_STORAGE = True`` makes it with ``torch.TypedStorage(n, dtype=..., device=a.device)``: right on a
GPU."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

DEVICE_STORAGE = False


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        storage = torch.TypedStorage(n, dtype=a.dtype, device=a.device) if DEVICE_STORAGE else torch.FloatStorage(n)
        out = torch.empty(0, device=a.device, dtype=a.dtype).set_(storage, 0, a.shape, a.stride())
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
