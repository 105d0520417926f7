# problem: kb1_03_batched_matmul
"""A batched matmul: the batch on grid axis 2 (tl.program_id(2)), each operand's batch stride
applied as an int64 offset, 2D masks broadcast from row and column vectors, tl.dot in ieee."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bmm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_base = a_ptr + batch * sab
    b_base = b_ptr + batch * sbb
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_base + rm[:, None] * sam + rk[None, :] * sak, mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_base + rk[:, None] * sbk + rn[None, :] * sbn, mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    c = c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        batch, M, K = A.shape
        _, _, N = B.shape
        C = torch.empty((batch, M, N), device=A.device, dtype=A.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = 16, 16, 16
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), batch)
        bmm_kernel[grid](
            A, B, C, M, N, K,
            A.stride(0), A.stride(1), A.stride(2), B.stride(0), B.stride(1), B.stride(2),
            C.stride(0), C.stride(1), C.stride(2),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )  # fmt: skip
        return C
