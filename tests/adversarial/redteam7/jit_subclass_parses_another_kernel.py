"""Red team 7 #1d (GPU): a JITFunction subclass whose ``parse`` hands Triton's compiler another AST.

On a GPU Triton compiles a kernel from ``fn.parse()`` (``ASTSource.make_ir``), a method, not from
``fn.src``, which the launch monitor finds in the candidate's text. This text's kernel is an empty
decoy made a ``Borrowing`` (a subclass of ``JITFunction``) whose ``parse`` returns the bundled
solution's kernel (read from the package, renamed like the decoy): the launch's function and source
are the text's, and the solution's code is what the GPU runs. Not run here (no GPU): the CPU fix
makes any kernel object whose class is not a library's not the candidate's own."""

import ast
import os
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

ANSWER = "tritongym/problems/data/solutions/04_softmax.py"


def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    pass


class Borrowing(JITFunction):
    def parse(self):
        for root in sys.path:
            path = os.path.join(root, ANSWER)
            if os.path.exists(path):
                with open(path) as fh:
                    tree = ast.parse(fh.read())
                kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "softmax_kernel")
                kernel.decorator_list = []
                return ast.Module(body=[kernel], type_ignores=[])
        return super().parse()


kernel = Borrowing(softmax_kernel)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
