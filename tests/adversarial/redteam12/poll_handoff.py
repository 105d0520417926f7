"""Red team 12 #1d (honest): ``tl.atomic_poll`` (Triton 3.9). Program 1 waits with
``tl.atomic_poll`` until program 0 has raised its flag (``tl.atomic_xchg``, after adding its partial sum
to the output), then adds its own: the poll's acquire orders program 1's read-modify-write after
program 0's, on a GPU too. Two programs at every size (a block of half the elements, rounded up to a
power of two; it was ``BLOCK = 512``, two programs at the small size alone and three at the CPU's
second size): the race check orders programs that share a flag, not chains of them."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_handoff(p_ptr, t_ptr, out_ptr, flags_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    partial = tl.sum(d * d, axis=0) / n
    if pid > 0:
        tl.atomic_poll(flags_ptr + pid - 1, 1)
    tl.store(out_ptr, tl.load(out_ptr) + partial)
    tl.atomic_xchg(flags_ptr + pid, 1)


class ModelNew(nn.Module):
    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        prediction, target = prediction.contiguous(), target.contiguous()
        n = prediction.numel()
        block = triton.next_power_of_2(triton.cdiv(n, 2))
        programs = triton.cdiv(n, block)
        out = torch.zeros((), device=prediction.device, dtype=torch.float32)
        flags = torch.zeros(programs, device=prediction.device, dtype=torch.int32)
        mse_handoff[(programs,)](prediction, target, out, flags, n, BLOCK=block)
        return out
