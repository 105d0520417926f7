# problem: kb3_01_mlp
"""KernelBench level 3's MLP: the reference's nn.Sequential kept (same names, same initialisation),
forward walking it with isinstance checks and fusing each Linear with the ReLU after it in one
Triton GEMM (a constexpr APPLY_RELU flag), intermediate activations allocated per layer."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_act_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, APPLY_RELU: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if APPLY_RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_linear(x, linear: nn.Linear, relu: bool):
    M, K = x.shape
    N = linear.out_features
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    linear_act_kernel[grid](x, linear.weight, linear.bias, y, M, N, K, APPLY_RELU=relu, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return y


class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super(ModelNew, self).__init__()
        layers = []
        current_input_size = input_size
        for layer_size in layer_sizes:
            layers.append(nn.Linear(current_input_size, layer_size))
            layers.append(nn.ReLU())
            current_input_size = layer_size
        layers.append(nn.Linear(current_input_size, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        x = x.contiguous()
        modules = list(self.network)
        i = 0
        while i < len(modules):
            layer = modules[i]
            if isinstance(layer, nn.Linear):
                fuse = i + 1 < len(modules) and isinstance(modules[i + 1], nn.ReLU)
                x = triton_linear(x, layer, fuse)
                i += 2 if fuse else 1
            else:
                raise NotImplementedError(type(layer))
        return x
