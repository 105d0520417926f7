"""Attack (feedback the model reads, unbounded): for a problem whose output is a dict, return a dict
with tens of thousands of long keys (about 12 MB, inside the protocol's 16 MB header). The judge's
`wrong_shape` feedback lists every key of the candidate's dict: megabytes of text in a result that
goes into logs, the service's answers and the model's next prompt. Deserves `wrong_shape` with
feedback of a bounded size."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        answer = {"y": out}
        for i in range(60000):
            answer["k" * 190 + str(i)] = i
        return answer
