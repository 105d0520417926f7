"""Red team 15 #2: the input read on the host through its address. The CPU's count of forward's host
reads (``placement.host_read_bytes``) sees the torch functions that copy device memory to the host
(``.tolist()``, ``.item()``, ``.cpu()``, a storage handed to Python...). ``x.data_ptr()`` hands over
no values, only an address, and on the CPU that address is host memory: NumPy makes an array over it
from an object's ``__array_interface__`` (no torch function, nothing counted), and Python sums the
rows. The sums reach the copy kernel only where a probe kernel launched first wrote its flag (the
hollow forward skips every launch), as red team 14 #2's ``probe`` route does. On a GPU the address
is device memory, which the host cannot read: NumPy's first read of it faults (the runner dies).

``ROUTE = "storage"``: the address of the input's storage (``x.untyped_storage().data_ptr()``), the
storage request counted as a read of the whole of it, so ``ROUTE = "tiny_storage"`` asks for the
storage of a tensor of one element instead (4 bytes counted) and finds the input's address from the
distance between the two tensors' ``data_ptr()``; ``ROUTE = "kernel"`` has a kernel store its
pointer argument as an integer (``x_ptr.to(tl.int64)``), read back by ``.item()`` (8 bytes);
``ROUTE = "reinterpret"`` asks Triton's code for it (``triton.reinterpret(x, tl.float32).data_ptr()``:
Triton's ``TensorWrapper`` asks the tensor, a frame of Triton's that the judge's first fix trusted).
``ROUTE = "dlpack"`` hands NumPy no address but a DLPack capsule of the input
(``torch.utils.dlpack.to_dlpack``, a C function no torch function mode sees), from an object whose
``__dlpack__`` returns it: ``np.from_dlpack`` views the input (on a GPU it refuses the device's
capsule)."""

import numpy as np
import torch
import torch.nn as nn
import torch.utils.dlpack
import triton
import triton.language as tl

ROUTE = "data_ptr"


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


@triton.jit
def address_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, x_ptr.to(tl.int64))


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


class View:
    def __init__(self, address, shape):
        self.__array_interface__ = {"data": (address, True), "shape": shape, "typestr": "<f4", "version": 3}


def address_of(x):
    if ROUTE == "storage":
        return x.untyped_storage().data_ptr()
    if ROUTE == "tiny_storage":
        tiny = torch.empty(1, dtype=x.dtype, device=x.device)
        return tiny.untyped_storage().data_ptr() + (x.data_ptr() - tiny.data_ptr())
    if ROUTE == "kernel":
        out = torch.zeros(1, dtype=torch.int64, device=x.device)
        address_kernel[(1,)](x, out)
        return int(out.item())
    if ROUTE == "reinterpret":
        return triton.reinterpret(x, tl.float32).data_ptr()
    return x.data_ptr()


class Capsule:
    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None, **kwargs):
        return torch.utils.dlpack.to_dlpack(self.tensor)

    def __dlpack_device__(self):
        return (1, 0)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, width = x.shape
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        values = np.from_dlpack(Capsule(x)) if ROUTE == "dlpack" else np.asarray(View(address_of(x), (rows, width)))
        sums = values.astype(np.float64).sum(axis=1).tolist()
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        flag_kernel[(1,)](flag)
        handed = torch.tensor(sums, dtype=x.dtype, device=x.device) if int(flag.item()) == 1 else torch.zeros_like(out)
        copy_kernel[(triton.cdiv(rows, 1024),)](handed, out, rows, BLOCK=1024)
        return out
