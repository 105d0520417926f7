"""Red team 11 #3: an autotuned vector add whose grid is sized for the first config's ``BLOCK``
(``triton.cdiv(n, 1024)``) rather than the chosen one's (``meta["BLOCK"]``): right under
``BLOCK=1024`` only; under ``BLOCK=256`` its programs cover a quarter of the output. The CPU's
autotuner (no GPU to measure) chose the first config every time: `ok`. A GPU chooses the config it
measures fastest, and the one that leaves three quarters of the work undone is: ``mismatch``."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n)
        return out
