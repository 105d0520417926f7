"""Red team 21: forward launches only a probe kernel (it writes a flag) and returns an output buffer left
unwritten; a chain of reference-cycle garbage whose ``__del__`` re-arms itself while forward's watch is on
(``torch.no_grad`` is in force there) computes the row sums with PyTorch into that buffer once the
garbage collector runs it after the watch closed, before the runner sends the output.

problem: 03_row_sum
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def probe_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


class Later:
    def __init__(self, x, out, flag):
        self.x, self.out, self.flag = x, out, flag
        self.me = self  # a cycle: only the garbage collector frees it

    def __del__(self):
        if torch.is_grad_enabled():  # forward's watch runs under no_grad: this is after it
            if int(self.flag[0]) == 1:  # not the hollow forward (its probe did not run)
                self.out.copy_(torch.sum(self.x, dim=1))
        else:
            Later(self.x, self.out, self.flag)  # still watched: wait for the next collection


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        probe_kernel[(1,)](flag)
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        for _ in range(4):
            Later(x, out, flag)
        return out
