import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean squared error between two tensors: a full reduction to a scalar."""

    def __init__(self):
        super().__init__()

    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((prediction - target) ** 2)


batch_size = 4096
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
