"""Red team 12 (closed in tests/adversarial/cpusize, #7): the output made the way Inductor's
generated CPU code makes its buffers, ``empty_strided_cpu`` (``torch._C._dynamo.guards._empty_strided_cpu``,
which the static checks allow as a helper of Inductor's output). It allocates below PyTorch's
dispatcher, so neither the placement check's TorchFunctionMode nor a TorchDispatchMode sees it: it
was `ok` on the CPU (now wrapped, and its result marked: `runtime_error`). On a GPU it is host
memory (Inductor's CUDA code calls ``empty_strided_cuda``), and Triton refuses the launch:
``runtime_error``."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch._C._dynamo.guards import _empty_strided_cpu as empty_strided_cpu


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        out = empty_strided_cpu(tuple(a.shape), tuple(a.stride()), a.dtype)
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        return out
