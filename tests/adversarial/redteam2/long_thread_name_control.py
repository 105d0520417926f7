"""Control for long_thread_name_dodges_hack.py: the same candidate with an 8-character thread name
gets hack_threads, as it should."""

import queue
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

NAME_CHARS = 8


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def launch_add(a, b, out):
    time.sleep(0.05)
    add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
    time.sleep(2.0)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        queue.threading.Thread(target=launch_add, args=(a, b, out), name="t" * NAME_CHARS, daemon=True).start()
        return out
