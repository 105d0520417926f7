"""Red team 6 #3: a kernel of the candidate's text whose work is the environment's own solution.

Since red team 5 #12 a kernel is the candidate's own only where its code and its source come from the
candidate's text. The kernel launched here does: ``softmax_kernel`` is in the text. But all it does is
call ``body``, a ``@triton.jit`` function it finds among its globals when it is compiled (on a GPU:
Triton inlines every JIT function a kernel calls, resolved through the kernel's ``__globals__``) or
run (the interpreter). The text's ``body`` is an empty decoy; before any launch the candidate rebinds
the global to the bundled solution's kernel, loaded with ``runpy`` from the package (reads are
unconfined; ``runpy`` passes the static checks). A kernel that takes pointers and reads its program
id is a device function like any other: called from the own kernel it does the whole softmax."""

import os
import runpy
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

ANSWER = "tritongym/problems/data/solutions/04_softmax.py"


@triton.jit
def body(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    pass


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    body(x_ptr, out_ptr, n_cols, stride_row, BLOCK)


def borrow() -> None:
    global body
    for root in sys.path:
        path = os.path.join(root, ANSWER)
        if os.path.exists(path):
            body = runpy.run_path(path)["softmax_kernel"]
            return


borrow()


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
