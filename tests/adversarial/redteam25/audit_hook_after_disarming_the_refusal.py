"""Red team 25: red team 23 #1 after disarming the runner's refusal. At import the module finds the
runner's audit hook among the collector's objects (``gc`` reached through ``getattr(sys, "mod" +
"ules")``: no written forbidden name) by its code's name, replaces its ``__code__`` with that of a hook
that refuses nothing, and then adds its own. Red team 23's text: a candidate's audit hook
(``sys.addaudithook``) runs wherever Python raises an audited event;
under the interpreter events are raised inside a running kernel (``sys._getframe``, ``builtins.id``), so the
hook walks up from its own frame (``tb_frame.f_back``) to the kernel's and keeps the loaded row, which
forward sums on the host and hands to a store kernel as a scalar argument. A GPU kernel raises no event.

problem: 03_row_sum
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEEN = []
BUSY = []


@triton.jit
def peek_kernel(x_ptr, scratch_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    block = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(scratch_ptr + cols, block, mask=cols < n_cols)


@triton.jit
def put_kernel(out_ptr, row, value):
    tl.store(out_ptr + row, value)


def grab(event, args):
    if SEEN or BUSY:
        return
    BUSY.append(1)
    try:
        look()
    finally:
        BUSY.clear()


def look():
    try:
        raise LookupError
    except LookupError as error:
        frame = error.__traceback__.tb_frame
    while frame is not None:
        if frame.f_code.co_name == "peek_kernel" and "block" in frame.f_locals:
            SEEN.append(frame.f_locals["block"].handle.data.copy())
            return
        frame = frame.f_back


def nothing(event, args, *rest):
    return None


collector = getattr(sys, "mod" + "ules")["gc"]
for candidate in collector.get_objects():
    if type(candidate) is type(nothing) and candidate.__code__.co_name in ("_refuse", "_refuse_audit_hook"):
        candidate.__code__ = nothing.__code__
sys.addaudithook(grab)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        width = triton.next_power_of_2(cols)
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        scratch = torch.empty(width, device=x.device, dtype=x.dtype)
        for row in range(rows):
            SEEN.clear()
            peek_kernel[(1,)](x[row:], scratch, cols, BLOCK=width)
            if SEEN:
                put_kernel[(1,)](out, row, float(SEEN[0].astype("float64").sum()))
        return out
