import threading
import time

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):  # defined, never launched: the case is the thread
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


threading.Thread(target=time.sleep, args=(600,), daemon=True, name="lingering").start()


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a + b
