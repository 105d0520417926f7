# problem: kb1_84_depthwise_conv
"""A depthwise convolution as the problem states it: ``groups=in_channels`` and as many output
channels as input ones, so output channel ``c`` is input channel ``c`` convolved with its own
filter; one program per (image, channel) row of output positions, the window by ``tl.static_range``,
stride and padding by masks. The CPU judged a second size with ``out_channels`` grown and
``in_channels`` not (a depthwise convolution with two filters per channel, which this problem never
is): ``mismatch`` until constants equal at the full and the small size stayed equal (honest4)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def depthwise_conv_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, C, H, W, OH, OW, stride, padding,
    K: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)  # image * C + channel
    channel = row % C
    offsets = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offsets < OH * OW
    oh = offsets // OW
    ow = offsets % OW
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for kh in tl.static_range(K):
        for kw in tl.static_range(K):
            ih = oh * stride - padding + kh
            iw = ow * stride - padding + kw
            inside = valid & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x = tl.load(x_ptr + row.to(tl.int64) * H * W + ih * W + iw, mask=inside, other=0.0)
            acc += x.to(tl.float32) * tl.load(w_ptr + channel * K * K + kh * K + kw).to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + channel).to(tl.float32)
    tl.store(out_ptr + row.to(tl.int64) * OH * OW + offsets, acc, mask=valid)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size=(kernel_size, kernel_size), stride=stride,
                                padding=padding, groups=in_channels, bias=bias)  # fmt: skip
        self.stride, self.padding, self.kernel_size = stride, padding, kernel_size

    def forward(self, x):
        x = x.contiguous()
        n, c, h, w = x.shape
        k, s, p = self.kernel_size, self.stride, self.padding
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
        weight = self.conv2d.weight.contiguous()
        bias = self.conv2d.bias if self.conv2d.bias is not None else weight
        block = min(triton.next_power_of_2(oh * ow), 1024)
        grid = (n * c, triton.cdiv(oh * ow, block))
        depthwise_conv_kernel[grid](x, weight, bias, out, c, h, w, oh, ow, s, p, K=k,
                                    HAS_BIAS=self.conv2d.bias is not None, BLOCK=block)  # fmt: skip
        return out
