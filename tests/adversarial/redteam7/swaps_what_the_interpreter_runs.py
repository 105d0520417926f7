"""Red team 7 #1: the interpreter runs another function than the one the judge checked.

Under Triton's interpreter (the CPU) a launch of ``kernel[grid](...)`` runs ``kernel.rewrite()``: a
function Triton compiles from the kernel's source as ``inspect.getsourcelines`` reads it (through
``linecache``), cached in ``InterpretedFunction.rewritten_fn``, a dict of the class keyed by the
Python function. The launch monitor checks ``kernel.fn`` (its code object must be compiled from the
text, red team 5 #12) and Triton's frontend checks the same function's source (frontend.py); neither
looks at what the interpreter will run. This text's only kernel is an empty decoy named like the
bundled solution's. Before the first launch it puts the bundled solution's rewritten kernel (loaded
with ``runpy``, read from the package) in the cache under the decoy's function: every launch is the
candidate's own and the solution does the whole softmax."""

import os
import runpy
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

ANSWER = "tritongym/problems/data/solutions/04_softmax.py"


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    pass


def borrow() -> None:
    for root in sys.path:
        path = os.path.join(root, ANSWER)
        if os.path.exists(path):
            solution = runpy.run_path(path)["softmax_kernel"]
            softmax_kernel.rewritten_fn[softmax_kernel.fn] = solution.rewrite()
            return


borrow()


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
