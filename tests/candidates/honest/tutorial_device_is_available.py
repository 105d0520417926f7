# problem: 04_softmax
"""PyTorch's most common device idiom: ``"cuda" if torch.cuda.is_available() else "cpu"``, at module
level, in a ``torch.device`` and in an ``if`` statement; buffers made on the device it names."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TORCH_DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pick_device() -> str:
    if not torch.cuda.is_available():
        device = "cpu"
    else:
        device = "cuda"
    return device


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.to(DEVICE).to(TORCH_DEVICE).contiguous()
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=pick_device())
        softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
        return out
