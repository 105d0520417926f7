"""Exploit (timing reachable): find the reference module (sys.modules, or any live nn.Module that
is not the candidate's) and slow its forward down, so the candidate looks faster. The reference
lives in the judge; the runner has none to find."""

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


import sys
import time


def wrap_reference() -> str:
    found = []
    for name, module in list(sys.modules.items()):
        model = getattr(module, "Model", None)
        if isinstance(model, type) and issubclass(model, nn.Module) and name != __name__:
            original = model.forward

            def slow(self, *args, _original=original):
                time.sleep(0.01)
                return _original(self, *args)

            model.forward = slow
            found.append(name)
    return ", ".join(found) or "not found"


class ModelNew(nn.Module):
    def forward(self, a, b):
        print("REFERENCE", wrap_reference(), flush=True)
        return launch_add(a, b, torch.empty_like(a))
