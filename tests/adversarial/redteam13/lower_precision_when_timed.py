"""Red team 13 #2 (GPU): the bundled linear + ReLU, exact (``input_precision="ieee"``) for its first
``PRECISE_CALLS`` calls and in bf16 (``FAST = "tf32"``: TF32) for every later one. The trials judge
the first calls against float64 at 32 times PyTorch's error; the timed batches come later and were
checked only at the loose tolerance (1e-2 relative to 1 + the element), which bf16's rounding (about
4e-3 of each operand) passes. The speedup is then bf16 tensor cores against PyTorch's float32 GEMM,
paid as the ``ok`` kernel's. A runner can tell the phases apart (the threat model says so); what
the candidate may not gain from that is speed, and here it did."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + rk
        x = tl.load(
            x_ptr + rm[:, None] * stride_xm + ks[None, :] * stride_xk,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        # w is (N, K); read it as its transpose (K, N).
        w = tl.load(
            w_ptr + ks[:, None] * stride_wk + rn[None, :] * stride_wn,
            mask=(ks[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        if PRECISION == "bf16":  # bf16 operands on the tensor cores, float32 accumulation
            acc += tl.dot(x.to(tl.bfloat16), w.to(tl.bfloat16))
        else:
            acc += tl.dot(x, w, input_precision=PRECISION)
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(
        out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


PRECISE_CALLS = 8
"""Calls computed in float32 (``ieee``): the trials (at least two), the fallback and hollow checks and
the timing's sample calls. Every later call is a timed batch's."""
FAST = "bf16"


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, b = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        bm, bn, bk = 64, 64, 32
        grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
        self.calls += 1
        precision = "ieee" if self.calls <= PRECISE_CALLS else FAST
        linear_relu_kernel[grid](
            x,
            w,
            b,
            out,
            M,
            N,
            K,
            x.stride(0),
            x.stride(1),
            w.stride(0),
            w.stride(1),
            out.stride(0),
            out.stride(1),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            PRECISION=precision,
        )
        return out
