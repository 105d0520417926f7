# problem: 10_transposed_broadcast_add
"""Strides passed to the kernel for non-contiguous (transposed) inputs, 2D blocks, broadcasting."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, M, N, sa0, sa1, sb0, sb1, so0, so1, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    a = tl.load(a_ptr + rm[:, None] * sa0 + rn[None, :] * sa1, mask=mask)
    b = tl.load(b_ptr + rm[:, None] * sb0 + rn[None, :] * sb1, mask=mask)
    tl.store(out_ptr + rm[:, None] * so0 + rn[None, :] * so1, a + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, *inputs):
        a, b = torch.broadcast_tensors(*inputs)
        M, N = a.shape
        out = torch.empty((M, N), device=a.device, dtype=torch.result_type(a, b))
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        add_kernel[grid](a, b, out, M, N, *a.stride(), *b.stride(), *out.stride(), BLOCK_M=16, BLOCK_N=16)
        return out
