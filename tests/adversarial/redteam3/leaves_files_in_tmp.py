"""Attack (any mode; the CPU default "own" included): a correct vector_add whose forward leaves a file
in /tmp (world-writable, sticky). The end of a job kills the runner's user's processes and removes its
job directory and its /dev/shm files, not its files elsewhere: the file outlives the job and the pool.
RLIMIT_FSIZE bounds each file (256 MiB), not their number, so jobs can fill the disk that holds the
sandboxes' homes and job directories (not run: a shared machine); here one 4 KiB file per job. It
says whether the file was made ("left a file") or refused (Landlock confines runners' writes)."""

import io
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

PREFIX = "/tmp/redteam3-leftover-"


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            with io.FileIO(f"{PREFIX}{os.getpid()}", "w") as fh:
                fh.write(b"x" * 4096)
            print("left a file in /tmp")
        except OSError as exc:  # Landlock: a runner writes beneath its job's directory only
            print("refused", exc.strerror)
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
