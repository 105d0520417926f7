import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    best_value = tl.full((BLOCK,), float("inf"), dtype=tl.float32)
    best_index = tl.zeros((BLOCK,), dtype=tl.int64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=float("inf"))
        better = x < best_value  # strict: keep the first index on ties within a lane
        best_index = tl.where(better, cols.to(tl.int64), best_index)
        best_value = tl.where(better, x, best_value)
    top = tl.min(best_value, axis=0)
    # The smallest column index holding the maximum, as torch.argmax returns.
    candidates = tl.where(best_value == top, best_index, n_cols)
    tl.store(out_ptr + row, tl.min(candidates, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=torch.int64)
        block = min(triton.next_power_of_2(cols), 2048)
        argmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=block)
        return out
