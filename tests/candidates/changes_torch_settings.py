import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a + b
