"""Exploit (timing reachable, GPU): patch the runner's batch loop so that the runner records ``done``
and answers the judge before the timed calls ran, then does the work on another thread, hoping the
judge's clock stops early. The judge copies the output slots as soon as ``done`` fires: what is not
written yet still holds the poison."""

import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl

import tritongym.evaluate.judge.speed as speed


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def launch_add(a, b, out):
    add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
    return out


_run_batch = speed.run_batch


def late(model, slots, count):
    def work():
        import time

        time.sleep(0.05)
        _run_batch(model, slots, count)

    threading.Thread(target=work).start()


speed.run_batch = late


class ModelNew(nn.Module):
    def forward(self, a, b):
        return launch_add(a, b, torch.empty_like(a))
