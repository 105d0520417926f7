# problem: kb2_66_matmul_dropout_softmax
# findings: torch_compute
"""The linear layer by F.linear with the module's nn.Linear parameters, dropout skipped in eval mode
(a Triton path only for eval; training keeps PyTorch's dropout), softmax over rows in Triton with
the row loaded once (padded with -inf) and tl.exp of x - max."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, in_stride, out_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        x = F.linear(x, self.matmul.weight, self.matmul.bias)
        if self.training:
            x = self.dropout(x)
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(n_rows,)](
            x, out, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=triton.next_power_of_2(n_cols)
        )
        return out
