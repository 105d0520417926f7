"""Attack (CPU, any runner user): vector_add computed by NumPy from inside a @triton.jit body.

Under the interpreter a kernel's body is Python: it may call any function in the module. The launch
is the candidate's own (counted), the hollow forward skips it (its output is wrong there), and NumPy
runs no PyTorch op for the recorder, so neither ``hack_no_triton`` nor ``hack_torch_compute`` fires.
Redteam2's attack 3 (torch.softmax in the body) is now recorded; NumPy in the body is not. The kernel
does no Triton work (it loads and stores nothing)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

STASH = []


def host_add():
    a, b, out = STASH
    out.numpy()[...] = a.numpy() + b.numpy()


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    host_add()


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        STASH[:] = [a.contiguous(), b.contiguous(), out]
        add_kernel[(1,)](a, b, out, a.numel(), BLOCK=256)
        STASH.clear()
        return out
