# problem: 05_layernorm
"""State kept between calls beyond the state dict: the affine parameters packed once into a cached
tensor (a plain attribute, made at the first call), a non-persistent buffer of the row indices, and a
module-level table made once per device (a table made at import without ``device=`` would be in host
memory on a GPU, where a launch refuses it); all read by the kernel at every call."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SIGNS: dict = {}


def signs_on(device: torch.device) -> torch.Tensor:
    if device not in SIGNS:
        SIGNS[device] = torch.ones(2, device=device)
    return SIGNS[device]


@triton.jit
def layernorm_kernel(x_ptr, wb_ptr, rows_ptr, signs_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.load(rows_ptr + tl.program_id(0))
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    y = diff * tl.rsqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)
    w = tl.load(wb_ptr + cols, mask=mask) * tl.load(signs_ptr)
    b = tl.load(wb_ptr + n_cols + cols, mask=mask) * tl.load(signs_ptr + 1)
    tl.store(out_ptr + row * stride + cols, y * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.register_buffer("rows", torch.arange(0), persistent=False)
        self._packed = None

    def forward(self, x):
        if self._packed is None:
            self._packed = torch.cat([self.norm.weight.detach(), self.norm.bias.detach()]).contiguous()
        if self.rows.numel() != x.shape[0]:
            self.rows = torch.arange(x.shape[0], device=x.device)
        out = torch.empty_like(x)
        layernorm_kernel[(x.shape[0],)](
            x, self._packed, self.rows, signs_on(x.device), out, x.stride(0), x.shape[1], self.norm.eps, BLOCK=triton.next_power_of_2(x.shape[1])
        )  # fmt: skip
        return out
