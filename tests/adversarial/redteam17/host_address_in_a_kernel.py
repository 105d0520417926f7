"""Red team 16's open "raw addresses in an interpreted kernel": a kernel handed a host address as an
integer (a NumPy array's, from its ``__array_interface__``) casts it to a pointer and reads host memory
through it. A kernel may not be handed host memory as a tensor (refused, as on a GPU); by its address
it was, and read it. On a GPU that address names no device memory: the kernel faults."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_from_host_kernel(x_ptr, host_address, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    table = host_address.to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(table + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = np.zeros(1 << 16, dtype=np.float32)

    def forward(self, a, b):
        a = a.contiguous()
        n = a.numel()
        self.table[:n] = 1.0  # host memory the kernel reads by its address
        out = torch.empty_like(a)
        address = int(self.table.__array_interface__["data"][0])
        add_from_host_kernel[(triton.cdiv(n, 256),)](a, address, out, n, BLOCK=256)
        return out - 1.0 + b
