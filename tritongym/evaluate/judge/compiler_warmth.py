"""Warming Triton's compiler in the zygote, so that no runner pays for its process's first compile.

A process's first Triton compile costs far more than its later ones: the compiler's native parts
set up once per process (on an H200 with torch 2.11 and Triton 3.6, the first kernel of a fresh
process took 0.53-0.61 s to compile and launch with its C launcher already built, every later one
0.04-0.06 s). A runner serves one candidate, so each would pay it at its first trial. The zygote
compiles one kernel of its own instead, for the GPU's target, before it forks any runner: compiling
needs no CUDA context (the zygote must never make one), and every runner forked afterwards
inherits the warm compiler (its first kernel: 0.07 s). The judge sends the target once it knows it
(``Zygote.warm``), since only a process with a CUDA context can ask the GPU.

The kernel is compiled into a scratch cache directory removed afterwards: a cached kernel would
leave the next zygote's compiler cold, and nothing of it is left for a runner to read.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

import triton
import triton.language as tl


@triton.jit
def warm_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Loads, a masked store, a reduction, transcendental math and a small matrix product: the
    compiler's common passes and lowerings, each set up once per process."""
    rows = tl.arange(0, BLOCK)
    offsets = tl.program_id(0) * BLOCK * BLOCK + rows[:, None] * BLOCK + rows[None, :]
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    z = tl.dot(x, y) + tl.exp(x) * tl.sum(y, axis=0)[None, :]
    tl.store(out_ptr + offsets, z, mask=mask)


def warm_compiler(capability: int, warp_size: int = 32) -> None:
    """Compile ``warm_kernel`` for CUDA compute capability ``capability`` (e.g. 90), without a GPU."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    source = ASTSource(warm_kernel, signature, constexprs={"BLOCK": 16})
    scratch = tempfile.mkdtemp(prefix="tritongym-warm-")
    before = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = scratch
    try:
        triton.compile(source, target=GPUTarget("cuda", capability, warp_size))
    finally:
        if before is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = before
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch)
