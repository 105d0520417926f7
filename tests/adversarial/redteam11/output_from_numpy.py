"""Red team 11 #2: the output is NumPy memory, ``torch.from_numpy(np.empty(n, np.float32))``: host
memory on every machine. Red team 10's placement check marks what forward makes on the host through
a TorchFunctionMode, and ``torch.from_numpy`` (like ``torch.frombuffer`` and the legacy
constructors) calls no torch function: the tensor was unmarked, the kernel wrote it under the
interpreter and the answer was right (`ok`). On a GPU Triton refuses the launch ("Pointer argument
... cannot be accessed from Triton (cpu tensor?)"): ``runtime_error``."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        out = torch.from_numpy(np.empty(n, dtype=np.float32))
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
