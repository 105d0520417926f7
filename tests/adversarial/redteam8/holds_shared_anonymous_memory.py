"""Red team 8 #2: RAM held in a shared anonymous mapping, which the memory measure subtracts.

The runner's memory measure (``runners.tree_memory_bytes``) is its processes' resident sets less their
shared-memory pages (``RssShmem``), those being counted through the shared-memory *files* the
processes hold open (memfds, /dev/shm). A shared anonymous mapping (``mmap.mmap(-1, size)``: Python's
default is ``MAP_SHARED``) is shmem with no file: its pages were subtracted and never added back.
This one touches ``SIZE`` of it at import, keeps it for the job, and passes under a smaller limit."""

import mmap
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

SIZE = 1200 << 20


def hold() -> mmap.mmap:
    held = mmap.mmap(-1, SIZE)  # MAP_SHARED | MAP_ANONYMOUS
    for offset in range(0, SIZE, 4096):  # every page resident
        held[offset] = 1
    print(f"HELD {SIZE >> 20} MiB of shared anonymous memory")
    time.sleep(0.5)  # holding it is the point, not a race with the measure
    return held


HELD = hold()


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
