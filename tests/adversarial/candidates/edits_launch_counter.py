"""Exploit (guard state reachable): a pure-PyTorch forward that finds the runner's launch monitor
and op recorder in its caller's frame and edits them, so it looks like a Triton kernel ran and no
PyTorch compute did; in the fallback check (the monitor blocks launches) it fails on purpose. The monitor runs in the candidate's process: this is the runner's word, which
the candidate can change (docs/environment.md, threat model). Its output is still the judge's to
check."""

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


def callers_local(name):
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if name in frame.f_locals:
            return frame.f_locals[name]
        frame = frame.f_back
    return None


def in_fallback_check() -> bool:
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if frame.f_code.co_name == "fallback":
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def forward(self, a, b):
        if in_fallback_check():
            raise RuntimeError("a kernel failed")  # pretend that Triton was needed
        monitor = callers_local("monitor")
        recorder = callers_local("recorder")
        out = a + b
        if recorder is not None:
            recorder.compute.clear()  # no PyTorch compute was seen
        if monitor is not None:
            monitor.launches += 1
        return out
