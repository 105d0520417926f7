# entry_point: ScaledShift
import torch
import torch.nn as nn


class ScaledShift(nn.Module):
    def __init__(self, features, shift=0.0, clamp=None):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.register_buffer("offset", torch.randn(features))
        self.shift = shift
        self.clamp = clamp

    def forward(self, x):
        y = x * self.scale + self.offset + self.shift
        return y.clamp(max=self.clamp) if self.clamp is not None else y


def get_inputs():
    return [torch.rand([4, 4, 8])]


def get_init_inputs():
    return [[], {"features": 8, "shift": 0.5, "clamp": 1.25}]
