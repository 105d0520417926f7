"""Red team 6 #4: #3 through a launch argument. Triton takes a JIT function as a ``tl.constexpr``
argument (an activation passed to a matmul kernel, say) and inlines it where the kernel calls it.
The candidate's kernel, its text's, calls ``BODY``, a parameter: the launch passes the bundled
solution's kernel, loaded with ``runpy`` from the package. No global is rebound: the fix of #3,
which follows the kernel's globals and closure, did not see it."""

import os
import runpy
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

ANSWER = "tritongym/problems/data/solutions/04_softmax.py"


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr, BODY: tl.constexpr):
    BODY(x_ptr, out_ptr, n_cols, stride_row, BLOCK)


def borrowed():
    for root in sys.path:
        path = os.path.join(root, ANSWER)
        if os.path.exists(path):
            return runpy.run_path(path)["softmax_kernel"]
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = borrowed()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=block, BODY=self.body)
        return out
