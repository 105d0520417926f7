"""Copies of a solution that Triton compiles anew, as RL's samples are: no two alike."""

from __future__ import annotations

import itertools

_copies = itertools.count()


def distinct_kernels(source: str) -> str:
    """The same source with a new Triton cache key for every kernel: the ``def`` line of each
    function decorated with ``@triton.jit`` (among other decorators or not) gets a comment with a
    number no other copy made in this process has. Triton hashes a kernel's source from its ``def``
    on, so the copy's kernels miss every cache (Triton's, a launcher's) that the original filled."""
    n = next(_copies)
    lines = source.splitlines()
    jitted = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("@triton.jit"):
            jitted = True
        elif jitted and stripped.startswith("def "):
            lines[i] += f"  # copy {n}"
            jitted = False
    return "\n".join(lines) + "\n"
