# problem: kb2_12_gemm_multiply_leakyrelu
"""Split-K by sequential launches accumulating into a torch.zeros fp32 buffer (each launch loads,
adds its K chunk's product and stores), keyword-only launch arguments, then an epilogue kernel;
the optional bias passed as a dummy pointer with HAS_BIAS=False when absent; @torch.inference_mode."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_mm_kernel(x_ptr, w_ptr, acc_ptr, M, N, K, k_start, k_end, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc_ptrs = acc_ptr + rm[:, None] * N + rn[None, :]
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.load(acc_ptrs, mask=out_mask, other=0.0)
    for k0 in range(k_start, k_end, BK):
        rk = k0 + tl.arange(0, BK)
        kmask = rk < k_end
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(acc_ptrs, acc, mask=out_mask)


@triton.jit
def epilogue_kernel(acc_ptr, bias_ptr, out_ptr, n, N, mult, slope, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(acc_ptr + offs, mask=mask)
    if HAS_BIAS:
        y += tl.load(bias_ptr + offs % N, mask=mask)
    y = y * mult
    tl.device_assert(slope >= 0, "negative slope")
    tl.store(out_ptr + offs, tl.where(y > 0, y, y * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    @torch.inference_mode()
    def forward(self, x):
        M, K = x.shape
        N = self.gemm.out_features
        acc = torch.zeros((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        split = 16
        for k_start in range(0, K, split):
            partial_mm_kernel[grid](
                x_ptr=x, w_ptr=self.gemm.weight, acc_ptr=acc, M=M, N=N, K=K, k_start=k_start,
                k_end=min(k_start + split, K), BM=16, BN=16, BK=16,
            )  # fmt: skip
        out = torch.empty_like(acc)
        bias = self.gemm.bias
        n = out.numel()
        epilogue_kernel[(triton.cdiv(n, 128),)](
            acc, bias if bias is not None else acc, out, n, N, self.multiplier, self.negative_slope,
            HAS_BIAS=bias is not None, BLOCK=128,
        )  # fmt: skip
        return out.view(M, N)
