"""Red team 7 #4: NumPy in a pre-run hook of the candidate's own kernel.

``JITFunction.add_pre_run_hook`` (and the interpreter's) registers Python that Triton runs inside
every launch of the kernel, before the kernel itself (under the interpreter with the arguments' host
copies, which are copied back after the launch). The launch is the candidate's own (its kernel is
the text's, empty), so the hook's NumPy softmax is inside an own launch: the op recorder sees no
PyTorch, the hollow forward skips the whole launch (so the output is wrong there), and nothing else
looks at the hook."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    pass


def hook(x, out, n_cols, stride_row, BLOCK=None, **kwargs):
    rows = x.cpu().numpy()
    e = np.exp(np.subtract(rows, rows.max(axis=1, keepdims=True)))
    out.copy_(torch.from_numpy(np.divide(e, e.sum(axis=1, keepdims=True))))


softmax_kernel.add_pre_run_hook(hook)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
