"""Red team 8 #1: space held in files the runner unlinked while it keeps them open.

Red team 7 #5's fix counts the allocated blocks of every file *below* the runner's directory. A file
that the runner reserves there (``posix_fallocate``) and then unlinks while it keeps a descriptor open
is below no directory: its blocks stay held (RAM where the sandbox's home is a tmpfs, else disk that
the concurrent jobs need) until the descriptor closes, and the runner's memory measure counted only
descriptors of memfds and /dev/shm files. This one holds ``FILES`` x 200 MiB that way, and passes."""

import io
import os
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

FILES = 6
HELD = []


def hold() -> None:
    for i in range(FILES):
        fh = io.FileIO(f"held-{i}", "w")  # `open` and `os.open` as written are refused
        os.posix_fallocate(fh.fileno(), 0, 200 << 20)
        os.unlink(f"held-{i}")
        HELD.append(fh)  # the descriptor keeps the blocks
    print(f"HELD {FILES * 200} MiB unlinked in {os.getcwd()}")
    time.sleep(0.5)  # holding it is the point (a disk filled for the job's length), not a race with the measure


hold()


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
