import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalisation of half-precision activations with a half-precision weight."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim, dtype=torch.float16))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(dim=-1, keepdim=True)
        normed = (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)
        return normed * self.weight


batch_size = 4096
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return [dim]
