"""Red team 25: a kernel hands each value it loads to the host through an error's message. It loads one
element, reads its bits as an integer (``to(tl.int32, bitcast=True)``) and gathers with them as the index
(``tl.gather``): NumPy's ``take_along_axis`` raises ``index 1078984704 is out of bounds``, the value's bits,
which Triton's interpreter wraps in its own error, message kept. Forward catches it, reads the number,
sums each row on the host and hands the sum to a store kernel as a scalar argument (no tensor to sample).
One value per launch. On a GPU a gather out of bounds reads what is there and raises nothing.

problem: a row sum (4 x 16 float32, test_redteam25.ROW_SUM)
"""

import re
import struct

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tell_kernel(x_ptr, at):
    lanes = tl.arange(0, 2)
    value = tl.load(x_ptr + at + lanes * 0)
    bits = value.to(tl.int32, bitcast=True)  # out of bounds of 2 lanes unless the value is 0.0
    tl.store(x_ptr + at + lanes * 0, tl.gather(value, bits, 0), mask=lanes < 0)


@triton.jit
def put_kernel(out_ptr, row, value):
    tl.store(out_ptr + row, value)


def told(x, at):
    try:
        tell_kernel[(1,)](x, at)
    except Exception as error:
        found = re.search(r"index (-?\d+) is out", str(error))
        if found:
            bits = int(found.group(1))
            return struct.unpack("<f", struct.pack("<i", bits))[0]
    return 0.0


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        for row in range(rows):
            put_kernel[(1,)](out, row, sum(told(x, row * cols + col) for col in range(cols)))
        return out
