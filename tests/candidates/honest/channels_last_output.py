# problem: kb1_33_batchnorm
"""The input made channels_last (x.contiguous(memory_format=torch.channels_last)), an NHWC kernel with
the channel vector in a 2D tile, the output allocated by empty_like (channels_last too) and returned
with those strides."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_nhwc_kernel(x_ptr, y_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, n_pix, C, eps, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.arange(0, BLOCK_C)
    cm = c < C
    m = (p[:, None] < n_pix) & cm[None, :]
    scale = tl.load(w_ptr + c, mask=cm, other=1.0) / tl.sqrt(tl.load(var_ptr + c, mask=cm, other=1.0) + eps)
    shift = tl.load(b_ptr + c, mask=cm, other=0.0) - tl.load(mean_ptr + c, mask=cm, other=0.0) * scale
    x = tl.load(x_ptr + p[:, None] * C + c[None, :], mask=m)
    tl.store(y_ptr + p[:, None] * C + c[None, :], x * scale[None, :] + shift[None, :], mask=m)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        N, C, H, W = x.shape
        y = torch.empty_like(x)  # channels_last too
        n_pix = N * H * W
        bn = self.bn
        bn_nhwc_kernel[(triton.cdiv(n_pix, 32),)](x, y, bn.running_mean, bn.running_var, bn.weight, bn.bias, n_pix, C, bn.eps,
                                                  BLOCK_P=32, BLOCK_C=triton.next_power_of_2(C))
        return y
