"""Red team 25: #5 without a number in any message. Each launch loads one element and fails or not by one
of its bits (a gather whose index is 2 where the bit is set: out of bounds of 2 lanes); forward catches
the error, so 32 launches give it the element's bits, and the host sums the rows and hands each sum to a
store kernel as a scalar argument. On a GPU a failing kernel ends the process's CUDA context (a gather
out of bounds there raises nothing at all).

problem: a row sum (4 x 16 float32, test_redteam25.ROW_SUM)
"""

import struct

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bit_kernel(x_ptr, at, shift):
    lanes = tl.arange(0, 2)
    value = tl.load(x_ptr + at + lanes * 0)
    index = ((value.to(tl.int32, bitcast=True) >> shift) & 1) * 2
    tl.store(x_ptr + at + lanes * 0, tl.gather(value, index, 0), mask=lanes < 0)


@triton.jit
def put_kernel(out_ptr, row, value):
    tl.store(out_ptr + row, value)


def told(x, at):
    bits = 0
    for shift in range(32):
        try:
            bit_kernel[(1,)](x, at, shift)
        except Exception:
            bits |= 1 << shift
    return struct.unpack("<f", struct.pack("<I", bits))[0]


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        for row in range(rows):
            put_kernel[(1,)](out, row, sum(told(x, row * cols + col) for col in range(cols)))
        return out
