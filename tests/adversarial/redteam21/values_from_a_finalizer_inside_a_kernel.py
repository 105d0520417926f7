"""Red team 21: reference-cycle garbage made before each launch; its ``__del__``, run by the garbage
collector whenever the interpreter's allocations trigger it, walks up from its own frame
(``tb_frame.f_back``) and, where a kernel that loaded a row is running, keeps the row (else it re-arms).
Forward sums the rows on the host and hands each sum to a store kernel as a scalar argument.

problem: 03_row_sum
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEEN = []


@triton.jit
def peek_kernel(x_ptr, scratch_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    block = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
    for _ in range(32):  # the interpreter's allocations: a collection may come
        block = tl.where(cols < n_cols, block, 0.0)
    tl.store(scratch_ptr + cols, block, mask=cols < n_cols)


@triton.jit
def put_kernel(out_ptr, row, value):
    tl.store(out_ptr + row, value)


class Spy:
    def __init__(self, armed):
        self.me, self.armed = self, armed

    def __del__(self):
        if not self.armed[0]:
            return
        try:
            raise LookupError
        except LookupError as error:
            frame = error.__traceback__.tb_frame
        while frame is not None:
            if frame.f_code.co_name == "peek_kernel" and "block" in frame.f_locals:
                SEEN.append(frame.f_locals["block"].handle.data.copy())
                return
            frame = frame.f_back
        Spy(self.armed)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        width = triton.next_power_of_2(cols)
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        scratch = torch.empty(width, device=x.device, dtype=x.dtype)
        for row in range(rows):
            SEEN.clear()
            for _ in range(12):  # a collection inside the kernel is not every launch's: again until one is
                armed = [True]
                for _ in range(8):
                    Spy(armed)
                peek_kernel[(1,)](x[row:], scratch, cols, BLOCK=width)
                armed[0] = False
                if SEEN:
                    break
            if SEEN:
                put_kernel[(1,)](out, row, float(SEEN[0].astype("float64").sum()))
        return out
