"""How far an fp32 reduction accumulated one partial at a time (``tl.atomic_add`` of each program's
partial, in launch order) is from the float64 result, against the float64 policy's bar.

A kernel that sums ``n`` elements in blocks of ``B`` adds ``P = n / B`` fp32 partials one after the other
into one accumulator (what an atomic_add per program does, in some order); PyTorch's own sum at fp32
(the bar's ``reference_error``) is a tree. For each ``(n, B)`` and input kind, over seeds, this prints the
candidate's relative error, PyTorch's, the bar (``compare.allowed_error`` for a scalar output), and the
verdict the float64 policy gives (``ok``, ``precision`` or ``mismatch``). Everything runs on the CPU in
NumPy and PyTorch: no Triton, no GPU (a GPU's PyTorch sum is a tree too; its exact error differs).

    PYTHONPATH=. python benchmarks/atomic_reduction_precision.py > benchmarks/results/atomic_reduction_precision.txt
"""

from __future__ import annotations

import platform

import numpy as np
import torch

from tritongym.evaluate.compare import LOOSE_TOLERANCE, Tolerance, allowed_error

SIZES = (1 << 16, 1 << 20, 1 << 24)
BLOCKS = (1, 16, 256, 4096)
SEEDS = range(5)
KINDS = ("uniform(0, 1)", "normal(0, 1)")


def draw(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random(n) if kind == "uniform(0, 1)" else rng.standard_normal(n)).astype(np.float32)


def verdict(x: np.ndarray, block: int) -> tuple[float, float, float, str]:
    """(candidate's relative error, PyTorch's, the bar, the verdict) for one input, relative to |sum|."""
    ref64 = float(x.astype(np.float64).sum())
    torch32 = float(torch.from_numpy(x).sum())
    partials = x.reshape(-1, block).sum(axis=1, dtype=np.float32)  # each program's own (pairwise) sum
    got = float(np.add.accumulate(partials, dtype=np.float32)[-1])  # then one atomic add after another
    scale = abs(ref64)
    bar = allowed_error(scale, scale, abs(torch32 - ref64), torch.float32, Tolerance())
    error = abs(got - ref64)
    name = "ok" if error <= bar else "precision" if error <= LOOSE_TOLERANCE * 2 * scale else "mismatch"
    return error / scale, abs(torch32 - ref64) / scale, bar / scale, name


def main() -> None:
    print(f"# benchmarks/atomic_reduction_precision.py: python {platform.python_version()}, torch {torch.__version__},")
    print(f"# numpy {np.__version__}, {platform.machine()}; {len(SEEDS)} seeds each; errors relative to |sum|")
    print(
        "| input | n | block | partials added | candidate error (max) | PyTorch's error (max) | bar (min) | verdicts |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in KINDS:
        for n in SIZES:
            for block in BLOCKS:
                rows = [verdict(draw(kind, n, seed), block) for seed in SEEDS]
                counts: dict[str, int] = {}
                for row in rows:
                    counts[row[3]] = counts.get(row[3], 0) + 1
                told = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                print(
                    f"| {kind} | {n} | {block} | {n // block} | {max(r[0] for r in rows):.2e} | "
                    f"{max(r[1] for r in rows):.2e} | {min(r[2] for r in rows):.2e} | {told} |"
                )


if __name__ == "__main__":
    main()
