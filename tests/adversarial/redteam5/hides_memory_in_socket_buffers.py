"""Red team 5 #4: a correct candidate that holds host memory in the kernel's socket buffers.

Bytes written to a UNIX socket pair and not read stay in the kernel (each socket up to its send
buffer, SO_SNDBUF, 2 x ``net.core.wmem_max``: 8 MiB here), in no process's resident set, memfd or
shared-memory file: none of what the runner's memory limit counts (runners.tree_memory_bytes,
RLIMIT_AS). The number of pairs is bounded by the descriptor limit (20,000 here: 80 GB).
``socketpair`` makes no connection: red team 5 #3's refusal of ``socket`` does not cover it.
The candidate holds ``HOLD_MIB`` and reports what the kernel's ``Shmem``-less counters show."""

import http.client

import torch
import torch.nn as nn
import triton
import triton.language as tl

net = getattr(http.client, "so" + "cket")
HOLD_MIB = 1280
HELD = []


def meminfo(key):
    with io_open("/proc/meminfo") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith(key))


def io_open(path):
    import io

    return io.TextIOWrapper(io.FileIO(path, "r"))


def hold():
    before = meminfo("MemAvailable:")
    chunk = b"x" * (1 << 20)
    held = 0
    try:
        while held < HOLD_MIB:
            a, b = net.socketpair()
            a.setsockopt(net.SOL_SOCKET, net.SO_SNDBUF, 64 << 20)
            a.setblocking(False)
            HELD.append((a, b))
            try:
                while held < HOLD_MIB:
                    a.send(chunk)
                    held += 1
            except BlockingIOError:
                pass
    except OSError as exc:
        print(f"STOPPED {exc}")
    print(f"HELD {held} MiB in {len(HELD)} socket pairs; MemAvailable fell by {before - meminfo('MemAvailable:')} MiB")


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not HELD:
            hold()
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
