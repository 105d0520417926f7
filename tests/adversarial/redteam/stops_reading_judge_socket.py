"""Attack (judge stall, costs a judge restart): on a problem whose inputs exceed a socket buffer
(full-size vector_add: 2 x 64 MiB), the candidate wraps the runner's `receive` so that the runner
reads Build, answers it, and then never reads its socket again. The judge then writes trial 1's inputs with a blocking
`sendall` that has no deadline: it hangs until the pool's backstop (timeout_s + 20 s) kills the
whole judge. Verdict `timeout` (deserved), but the judge, its zygote and its spare are lost and
restarted, and the slot is blocked 20 s longer than the job's own timeout."""

import sys
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


protocol = getattr(sys, "mod" + "ules")["tritongym.evaluate.judge.protocol"]
receive, calls = protocol.receive, [0]


def never_again(*args, **kwargs):
    calls[0] += 1
    if calls[0] > 1:  # Build was the first: from now on the runner does not read
        time.sleep(1e6)
    return receive(*args, **kwargs)


protocol.receive = never_again


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
