"""A problem for red team 10 #4b (not bundled): its input ``x`` is a slice with gaps (every row of
a wider matrix, cut to its first ``cols`` columns), as a problem may give a view of a larger tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


rows = 6
cols = 40


def get_inputs():
    return [torch.randn(rows, 2 * cols)[:, :cols]]


def get_init_inputs():
    return []
