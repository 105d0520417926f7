# problem: kb2_01_conv2d_relu_biasadd
# findings: torch_compute
"""The epilogue applied in place on the convolution's output (self.conv(x), no second buffer): the
kernel loads and stores the same pointer, the channel from (offs // HW) % C, and that tensor is
returned."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_bias_inplace_kernel(x_ptr, bias_ptr, n, C, HW, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, tl.maximum(x, 0.0) + tl.load(bias_ptr + c, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        n = x.numel()
        relu_bias_inplace_kernel[(triton.cdiv(n, 256),)](x, self.bias, n, x.shape[1], x.shape[2] * x.shape[3], BLOCK=256)
        return x
