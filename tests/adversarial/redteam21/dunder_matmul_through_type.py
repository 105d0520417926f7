"""Red team 21: the matmul as ``type(x).__matmul__`` (no ``@``, no torch function named), a kernel does
the bias and ReLU.

problem: 06_linear_relu
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask) + tl.load(b_ptr + offs % cols, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mm = getattr(type(x), "__mat" + "mul__")
        y = mm(x, self.linear.weight.transpose(0, 1)).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        bias_relu_kernel[(triton.cdiv(n, 256),)](y, self.linear.bias, out, n, y.shape[1], BLOCK=256)
        return out
