"""The timed check's element rule in one Triton kernel (``count_into``): per output, the elements over
the loose bound and over the precision bound, counted on the GPU in one launch per group of calls
(the torch version queued up to 49 operations per chunk: BENCHMARKS.md, session 13). On CPU tensors
(the tests) the same kernel runs in Triton's interpreter.

The rule, for a real floating output (every value upcast to float64, which is exact, so equality and
NaNs are those of the output's own dtype): an element passes the loose bound where
``|g - e| <= (|e| + rms) * LOOSE_TOLERANCE`` and ``e`` is finite, the precision bound where
``|g - e| <= threshold``; either way it passes where it is accepted whatever its error: ``g == e``, both
NaN, or ``g`` finite where ``e`` is not (speed.check_batch says why). An integer or boolean output passes
where ``g == e`` (both widened to int64). Complex outputs are not counted here (speed.check_counts).

Each failing element adds one to its count by an atomic add (masked: an honest output adds nothing); a
block reduction (``tl.sum``) cannot run in the interpreter outside ``TRITON_INTERPRET=1``, and
``tl.reduce`` there calls Python once per element. An output wrong everywhere costs one atomic per element,
after the clock stopped."""

from __future__ import annotations

import numpy
import torch
import triton
import triton.language as tl

BLOCK = 1024
CPU_BLOCK = 1 << 16
"""Elements per program on a GPU, and in the interpreter (CPU tensors: fewer programs, each vectorised by numpy)."""


def _count(
    e_ptr,
    g_ptr,
    n,
    rms_ptr,
    loose_ptr,
    threshold_ptr,
    counts_ptr,
    FLOAT: tl.constexpr,
    BOUNDED: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    if FLOAT:
        e = tl.load(e_ptr + offsets, mask=inside, other=0.0).to(tl.float64)
        g = tl.load(g_ptr + offsets, mask=inside, other=0.0).to(tl.float64)
        e_finite = (e - e) == 0.0
        accepted = (g == e) | ((e != e) & (g != g)) | (((g - g) == 0.0) & ~e_finite)
        error = tl.abs(g - e)
        rms = tl.load(rms_ptr)
        loose = tl.load(loose_ptr)
        fine = (error <= (tl.abs(e) + rms) * loose) & e_finite
        bad = inside & ~(fine | accepted)
        tl.atomic_add(counts_ptr + (offsets - offsets), 1, mask=bad)
        if BOUNDED:
            threshold = tl.load(threshold_ptr)
            imprecise = inside & ~((error <= threshold) | accepted)
            tl.atomic_add(counts_ptr + 1 + (offsets - offsets), 1, mask=imprecise)
    else:
        e = tl.load(e_ptr + offsets, mask=inside, other=0).to(tl.int64)
        g = tl.load(g_ptr + offsets, mask=inside, other=0).to(tl.int64)
        bad = inside & (e != g)
        tl.atomic_add(counts_ptr + (offsets - offsets), 1, mask=bad)


_kernels: dict[bool, object] = {}
_loose: dict[torch.device, torch.Tensor] = {}


def _kernel(cuda: bool):
    if cuda not in _kernels:
        if cuda:
            _kernels[cuda] = triton.jit(_count)
        else:
            from triton.runtime.interpreter import InterpretedFunction

            _kernels[cuda] = InterpretedFunction(_count)
    return _kernels[cuda]


def loose_tolerance(device: torch.device, value: float) -> torch.Tensor:
    """``value`` as a float64 scalar on ``device`` (made once per device: a Triton float argument is float32)."""
    if device not in _loose:
        _loose[device] = torch.tensor(value, dtype=torch.float64, device=device)
    return _loose[device]


def count_into(
    counts: torch.Tensor,
    e: torch.Tensor,
    g: torch.Tensor,
    rms: torch.Tensor | None,
    loose: torch.Tensor | None,
    threshold: torch.Tensor | None,
) -> None:
    """Add to ``counts`` (two int64 elements on ``e``'s device: over the loose bound, over the precision
    bound) the counts of ``g`` against ``e`` (flat, contiguous, the same dtype and length; real floating,
    integer or boolean). ``rms`` and ``loose`` (float64 scalars) are a floating output's; ``threshold``
    (a float64 scalar, or None: no precision bound) is the precision bound's."""
    n = e.numel()
    if not n:
        return
    floating = e.is_floating_point()
    spare = counts if not floating else rms
    block = BLOCK if e.is_cuda else CPU_BLOCK
    with numpy.errstate(invalid="ignore", over="ignore"):  # numpy in the interpreter: IEEE results, as on a GPU
        _kernel(e.is_cuda)[(triton.cdiv(n, block),)](
            e,
            g,
            n,
            spare if rms is None else rms,
            spare if loose is None else loose,
            spare if threshold is None else threshold,
            counts,
            FLOAT=floating,
            BOUNDED=threshold is not None,
            BLOCK=block,
        )
