"""Red team 19 #5 (decoys nearer forward's output than the answer): glue's answer (slices and ``torch.cat``)
handed to a kernel that writes it, shifted by 0.8 of the float64 policy's allowed error (32 float32
rounding units of the largest magnitude, plus ``scale_floor`` times the RMS: a kernel computes both, a
roll keeps them), into the output; then 256 clones of the kernel's output (the kernels' work, as glue
moved it) each with its first 8 elements set by ``copy_`` (from a host list) 1.2 allowed errors off the answer's (0.4
from forward's output: off the answer by more than the tolerance, read back as 32 bytes, under the
floor of what counts as a host read),
handed to a kernel that does nothing. Each decoy is looked at (glue wrote it), and each is nearer
forward's output than the answer is (0.4 allowed error against 0.8), so the 256 samples sent per output are
the decoys', never the answer's. The hollow forward's latest four (``MadeBeforeKernels``) are decoys
too (each one value but one, each alive at an address of its own: kept)."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

DECOYS = 256
SET = 8
"""Elements of each decoy set off the answer: every sample (every ``stepped_sample``-th element from a start
below the step, a prime below 8 up to 7,168 elements) holds one of them."""
FACTOR, EPS, FLOOR = 32.0, 2.0**-23, 1e-5


@triton.jit
def scale_kernel(x_ptr, scale_ptr, n, BLOCK: tl.constexpr):
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    largest = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
        total += v * v
        largest = tl.maximum(largest, tl.abs(v))
    tl.store(scale_ptr, tl.sqrt(tl.sum(total, axis=0) / n))
    tl.store(scale_ptr + 1, tl.max(largest, axis=0))


@triton.jit
def shift_kernel(src_ptr, out_ptr, n, c, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask) + c, mask=mask)


@triton.jit
def nothing_kernel(ptr):
    pass


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, shift: int) -> torch.Tensor:
        s = shift % x.shape[1]
        answer = torch.cat((x[:, x.shape[1] - s :], x[:, : x.shape[1] - s]), dim=1)
        n = x.numel()
        scale = torch.empty(2, device=x.device)
        scale_kernel[(1,)](x, scale, n, BLOCK=1024)
        allowed = FLOOR * scale[0].item() + FACTOR * EPS * scale[1].item()
        allowed = allowed if math.isfinite(allowed) else 0.0
        out = torch.empty_like(x)
        shift_kernel[(triton.cdiv(n, 1024),)](answer, out, n, 0.8 * allowed, BLOCK=1024)
        firsts = out.view(-1)[:SET].tolist()
        patch = torch.tensor([v + 0.4 * allowed if math.isfinite(v) else 0.0 for v in firsts], device=x.device)
        decoys = []  # kept alive: each at an address of its own
        for _ in range(DECOYS):
            decoys.append(out.clone())
            decoys[-1].view(-1)[:SET].copy_(patch)
            nothing_kernel[(1,)](decoys[-1])
        return out
