# problem: scaled_shift_kernelbook
"""KernelBook's form: the class named by the entry point (ScaledShiftNew), init inputs as [args,
kwargs], a parameter and a buffer of the module, an optional clamp passed as None or a float, a kernel
assigned to the module in __init__ and launched through self."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_shift_kernel(
    x_ptr, s_ptr, o_ptr, out_ptr, n, features, shift, clamp, HAS_CLAMP: tl.constexpr, BLOCK: tl.constexpr
):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    f = offsets % features
    y = tl.load(x_ptr + offsets, mask=mask) * tl.load(s_ptr + f, mask=mask) + tl.load(o_ptr + f, mask=mask) + shift
    if HAS_CLAMP:
        y = tl.minimum(y, clamp)
    tl.store(out_ptr + offsets, y, mask=mask)


class ScaledShiftNew(nn.Module):
    def __init__(self, features, shift=0.0, clamp=None):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.register_buffer("offset", torch.randn(features))
        self.shift = shift
        self.clamp = clamp
        self.kernel = scaled_shift_kernel

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        clamp = 0.0 if self.clamp is None else float(self.clamp)
        self.kernel[(triton.cdiv(n, 64),)](
            x, self.scale, self.offset, out, n, self.scale.numel(), self.shift, clamp,
            HAS_CLAMP=self.clamp is not None, BLOCK=64,
        )  # fmt: skip
        return out
