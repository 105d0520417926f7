# problem: kb1_18_matmul_transposed_both
"""C = A.T @ B.T with no copies: A.T and B.T passed as views (.T) and read through their strides;
the tiles loaded in their stored layout and tl.trans-posed before tl.dot."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_tt_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, s_ak, s_am, s_bn, s_bk, s_cm, s_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # a is stored (K, M), b is stored (N, K)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a_km = tl.load(a_ptr + rk[:, None] * s_ak + rm[None, :] * s_am, mask=(rk[:, None] < K) & (rm[None, :] < M), other=0.0)
        b_nk = tl.load(b_ptr + rn[:, None] * s_bn + rk[None, :] * s_bk, mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
        acc = tl.dot(tl.trans(a_km), tl.trans(b_nk), acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        K, M = A.shape
        N = B.shape[0]
        C = torch.empty(M, N, device=A.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        matmul_tt_kernel[grid](
            A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
            BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
        )  # fmt: skip
        return C
