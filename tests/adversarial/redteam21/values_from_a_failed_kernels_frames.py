"""Red team 21: a kernel loads each row and divides it by zero; forward has made warnings errors
(``warnings.simplefilter("error")``), so NumPy's divide-by-zero warning under the interpreter raises out of
the launch, and forward reads the loaded block from the kernel's frame (the error's cause's traceback: the
interpreter's tensors hold NumPy arrays), sums the rows on the host and hands each sum to a store kernel as
a scalar argument. A GPU divides by zero without a word.

problem: 03_row_sum
"""

import warnings

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def peek_kernel(x_ptr, scratch_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    block = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(scratch_ptr + cols, block / (block - block), mask=cols < n_cols)


@triton.jit
def put_kernel(out_ptr, row, value):
    tl.store(out_ptr + row, value)


def loaded_block(error):
    while error is not None:
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_name == "peek_kernel":
                block = tb.tb_frame.f_locals.get("block")
                return None if block is None else block.handle.data
            tb = tb.tb_next
        error = error.__cause__ or error.__context__
    return None


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        width = triton.next_power_of_2(cols)
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        scratch = torch.empty(width, device=x.device, dtype=x.dtype)
        for row in range(rows):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    peek_kernel[(1,)](x[row:], scratch, cols, BLOCK=width)
            except Exception as error:
                block = loaded_block(error)
                if block is None:  # the fallback check's blocked launch: fail as a kernel would
                    raise
                put_kernel[(1,)](out, row, float(block.astype("float64").sum()))
        return out
