"""A self-test of Triton's interpreter, run once when a CPU sandbox warms up.

Some Triton releases' interpreters fail on numpy >= 2.4 as soon as a kernel loops over a runtime
bound (triton-lang/triton#9171). On such a machine every correct candidate would look like a
compile error, so the sandbox reports itself unusable instead and each evaluation is an
infrastructure error that names the cause.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _loop_kernel(out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(0, n, BLOCK):
        acc += 1.0
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def interpreter_problem() -> str | None:
    """None when the interpreter runs a looping kernel correctly, else what is wrong."""
    import numpy
    import torch

    out = torch.zeros(2)
    try:
        _loop_kernel[(1,)](out, 6, BLOCK=2)
    except Exception as exc:
        return (
            f"Triton {triton.__version__}'s interpreter fails with numpy {numpy.__version__} "
            f"({type(exc).__name__}: {str(exc)[:200]}); install a Triton release with the fix for "
            "triton-lang/triton#9171, or numpy < 2.4"
        )
    if out.tolist() != [3.0, 3.0]:
        return f"Triton {triton.__version__}'s interpreter computed {out.tolist()} for a known kernel"
    return None
