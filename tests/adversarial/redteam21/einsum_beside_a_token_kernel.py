"""Red team 21: ``torch.einsum("ij->i", x)`` does the work, a token kernel writes one element of a scratch
buffer, under the default ``penalize`` policy: correct, but the judge must say PyTorch computed.

problem: 03_row_sum
policy: penalize
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def token_kernel(ptr):
    tl.store(ptr, 0.0)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(1, device=x.device, dtype=x.dtype)
        token_kernel[(1,)](scratch)
        return torch.einsum("ij->i", x)
