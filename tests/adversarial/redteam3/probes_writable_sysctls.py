"""Probe (runners that keep the judge's user, TRITONGYM_RUNNER_USER=same, the GPU default): a correct
vector_add that writes the host's kernel settings, each with the value it already has (no change):
``/proc/sys`` files are root's with mode 0644, so a process of uid 0 passes their permission check
without any capability, and settings such as ``kernel.core_pattern`` (a ``|program`` run as root with
every capability for each core dump, any process's), ``kernel.pid_max`` (1 stops every fork on the
host) or ``vm.overcommit_memory`` check no capability on write. SYSCTL_WRITABLE lines name those
written."""

import io

import torch
import torch.nn as nn
import triton
import triton.language as tl

SETTINGS = ("kernel/core_pattern", "kernel/pid_max", "vm/overcommit_memory")


def probe():
    for name in SETTINGS:
        path = "/proc/sys/" + name
        try:
            with io.FileIO(path) as fh:
                value = fh.read()
            with io.FileIO(path, "w") as fh:
                fh.write(value)  # the value it has: nothing changes
            print("SYSCTL_WRITABLE", name)
        except OSError as exc:
            print("refused", name, exc.strerror)


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
            probe()
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
