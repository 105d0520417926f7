"""#2d's caller rule forged: the count of forward's host reads left out a request for a tensor's
storage where the calling frame's file (its code's ``co_filename``) was Triton's or the judge's. A
function whose code object is replaced by a copy naming Triton's file (``__code__.replace``: the
static checks refuse ``exec`` and ``compile``, not that) asks for the input's storage, and Python
decodes its bytes (``struct``) and sums the rows: the sums reach the kernel only where a probe
kernel launched first wrote its flag (the hollow forward skips every launch), as #2's ``probe``
route does. ``FORGE``:

* ``file``: the reading function's own code, renamed after Triton's file;
* ``globals``: that code run in a function built over a Triton module's globals too (a
  function's ``__globals__`` is its module's namespace), so the frame's globals are Triton's.

``ok`` under ``torch_compute="forbid"`` while the frame's file decided."""

import struct

import torch
import torch.nn as nn
import triton
import triton.language as tl

FORGE = "file"


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


def storage_bytes(x):
    return bytes(x.untyped_storage().tolist())


storage_bytes.__code__ = storage_bytes.__code__.replace(co_filename=triton.jit.__code__.co_filename)
if FORGE == "globals":
    storage_bytes = type(storage_bytes)(storage_bytes.__code__, triton.jit.__globals__, "storage_bytes")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, width = x.shape
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        x = x.contiguous()
        values = struct.unpack(f"{x.numel()}f", storage_bytes(x)[: 4 * x.numel()])
        sums = [sum(values[r * width : (r + 1) * width]) for r in range(rows)]
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        flag_kernel[(1,)](flag)
        handed = torch.tensor(sums, dtype=x.dtype, device=x.device) if int(flag.item()) == 1 else torch.zeros_like(out)
        copy_kernel[(triton.cdiv(rows, 1024),)](handed, out, rows, BLOCK=1024)
        return out
