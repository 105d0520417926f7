"""Red team 5 #12: a text with no working kernel that runs the environment's own solution.

tritongym ships a Triton solution for every bundled problem (``tritongym/problems/data/solutions``),
readable by every runner (reads are unconfined; the files are 0644 in the installed package). The
candidate finds the one of its problem through ``sys.path``, writes it over its own file (which its
runner owns) and runs it with ``runpy``: the kernels it defines then carry the candidate's file name,
which is all the launch monitor asks of an own kernel. Its text holds only a decoy ``@triton.jit``
named like the solution's kernel (so that the GPU's profile names match the text), which computes
nothing. ``io`` and ``runpy`` are not refused by the static checks."""

import io
import os
import runpy
import sys

import torch.nn as nn
import triton
import triton.language as tl

ANSWER = "tritongym/problems/data/solutions/04_softmax.py"


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    pass


def borrowed():
    for root in sys.path:
        path = os.path.join(root, ANSWER)
        if os.path.exists(path):
            text = io.FileIO(path, "r").readall()
            mine = io.FileIO(__file__, "w")
            mine.write(text)
            mine.close()
            return runpy.run_path(__file__)["ModelNew"]
    return nn.Identity


ModelNew = borrowed()
