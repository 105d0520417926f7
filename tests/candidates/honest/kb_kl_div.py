# problem: kb1_98_kldiv
# findings: torch_compute
"""kl_div(log(p), q, batchmean): targets * (log(targets) - log(predictions)) with the 0 * log 0 = 0
convention by tl.where, row partial sums to a buffer, then the batch mean with torch's .sum() of the
few partials (a tiny PyTorch epilogue: the documented torch_compute finding)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kl_rows_kernel(p_ptr, q_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    p = tl.load(p_ptr + row * n_cols + cols, mask=mask, other=1.0)
    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0.0)
    term = tl.where(q > 0, q * (tl.log(q) - tl.log(p)), 0.0)
    tl.store(out_ptr + row, tl.sum(term, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        B, D = predictions.shape
        partial = torch.empty(B, device=predictions.device, dtype=torch.float32)
        kl_rows_kernel[(B,)](predictions.contiguous(), targets.contiguous(), partial, D, BLOCK=triton.next_power_of_2(D))
        return partial.sum() / B
