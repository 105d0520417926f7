"""Red team 13 #5: NumPy's own Python, below the functions the interpreter calls. After #1's fix every
attribute of ``numpy`` was watched, but ``np.broadcast_to`` (which the interpreter's builder calls for
``tl.broadcast_to``) calls ``_broadcast_to``, a global of ``numpy.lib._stride_tricks_impl``: this
solution replaces that global at import (the module reached through ``getattr(sys, "modules")``, an
attribute assignment on a name the static checks take for its own). Inside its own launch, the row
broadcast to two rows comes back as two rows of its softmax, which the kernel sums and halves. On a
GPU the kernel sums two copies of the row and halves them: the row itself, a ``mismatch``."""

import sys

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

stride_tricks = getattr(sys, "modules")["numpy.lib._stride_tricks_impl"]  # noqa: B009
BROADCAST = stride_tricks._broadcast_to


def host_broadcast(array, shape, subok, readonly):
    if len(shape) == 2 and shape[0] == 2 and array.ndim == 2 and array.dtype == np.float32:
        e = np.exp(array[0].astype(np.float64) - array[0].max())
        array = (e / e.sum()).astype(np.float32)[None, :]
    return BROADCAST(array, shape, subok, readonly)


stride_tricks._broadcast_to = host_broadcast


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    y = tl.sum(tl.broadcast_to(x[None, :], (2, BLOCK)), axis=0) * 0.5
    tl.store(out_ptr + row * stride_row + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
