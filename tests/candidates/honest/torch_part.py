# problem: 06_linear_relu
# findings: torch_compute
"""The matmul left to PyTorch (torch.matmul) and the bias + ReLU epilogue in a Triton kernel: honest
code that uses PyTorch for part of the work (the torch_compute policy's finding, verdict ok)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n, N, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(y_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets % N, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.matmul(x, self.linear.weight.t())
        out = torch.empty_like(y)
        n = y.numel()
        bias_relu_kernel[(triton.cdiv(n, 256),)](y, self.linear.bias, out, n, y.shape[1], BLOCK=256)
        return out
