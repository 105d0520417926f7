"""Red team 8 #3 (GPU, by reading): a candidate that holds nearly all of the GPU's free memory.

The runner's limits are host memory: CUDA allocations are in no resident set. The judge makes trial 1
before the candidate's import and the later trials (and the timing slots) after it; an out-of-memory
error raised in the judge is the judge's (``infrastructure_error``: "does not fit on this device
beside the candidate's process"), so a wrong answer becomes a dropped sample instead of a penalty,
and every other job on the GPU runs out of memory beside it. This one answers wrong on purpose."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def hold() -> list:
    held = []
    if torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info()
        chunk = 256 << 20
        for _ in range(max(free // chunk - 1, 0)):  # all of it but one chunk
            try:
                held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
            except torch.OutOfMemoryError:
                break
    print(f"HELD {len(held) * 256} MiB of GPU memory")
    return held


HELD = hold()


@triton.jit
def wrong_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask), mask=mask)  # a, not a + b


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        wrong_kernel[(triton.cdiv(a.numel(), 256),)](a, out, a.numel(), BLOCK=256)
        return out
