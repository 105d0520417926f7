import torch
import torch.nn as nn


class Model(nn.Module):
    """A chain of elementwise operations with learned parameters, then a mean over each row."""

    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x * self.scale) + self.bias
        y = torch.clamp(y, min=-0.5, max=1.0)
        return y.mean(dim=1)


batch_size = 4096
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
