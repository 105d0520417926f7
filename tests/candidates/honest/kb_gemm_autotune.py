# problem: kb2_12_gemm_multiply_leakyrelu
"""A Triton GEMM as models write it for KernelBench level 2: @triton.autotune over several configs
(BLOCK_M/N/K, GROUP_M, num_stages, num_warps), a grouped program-id swizzle, the nn.Linear's weight
read as W^T through its strides, tl.dot with an fp32 accumulator (ieee: the problem is float32), the
bias, the multiplier and LeakyReLU fused in the epilogue through a @triton.jit helper."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def get_autotune_config():
    return [
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 8}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 8}, num_stages=2, num_warps=8),
    ]


@triton.jit
def leaky_relu(x, slope):
    return tl.where(x >= 0, x, x * slope)


@triton.autotune(configs=get_autotune_config(), key=["M", "N", "K"])
@triton.jit
def gemm_mul_leaky_kernel(
    a_ptr, b_ptr, bias_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    multiplier, negative_slope,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    bias = tl.load(bias_ptr + offs_bn)
    c = (accumulator + bias[None, :]) * multiplier
    c = leaky_relu(c, negative_slope)

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.gemm.out_features
        w = self.gemm.weight  # (N, K): read as (K, N) through its strides
        c = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
        gemm_mul_leaky_kernel[grid](
            x, w, self.gemm.bias, c, M, N, K,
            x.stride(0), x.stride(1), w.stride(1), w.stride(0), c.stride(0), c.stride(1),
            self.multiplier, self.negative_slope,
        )  # fmt: skip
        return c
