# problem: kb3_01_mlp
"""Layers as a subclass of nn.Linear whose forward launches a Triton GEMM (ReLU fused by a constexpr
flag), kept in an nn.Sequential at the reference's indices (nn.Identity where its ReLU was), so its
state copies by name; forward is the Sequential's own call."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, RELU: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class TritonLinear(nn.Linear):
    def __init__(self, in_features, out_features, relu=False):
        super().__init__(in_features, out_features)
        self.relu = relu

    def forward(self, x):
        M, K = x.shape
        y = x.new_empty((M, self.out_features))
        grid = (triton.cdiv(M, 16), triton.cdiv(self.out_features, 16))
        linear_kernel[grid](x, self.weight, self.bias, y, M, self.out_features, K, RELU=self.relu, BM=16, BN=16, BK=16)
        return y


class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers, cur = [], input_size
        for size in layer_sizes:
            layers += [TritonLinear(cur, size, relu=True), nn.Identity()]
            cur = size
        layers.append(TritonLinear(cur, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x.contiguous())
