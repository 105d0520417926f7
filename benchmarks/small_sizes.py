"""Shrink every problem of a KernelBench checkout with ``Problem.small()`` and run each shrunk
reference once on the CPU: does the shrunk problem still build and run, how small did it get, and
how long does its reference take? And at the second size a CPU judge adds for a shrunk problem
(``Problem.resized``: one trial more there), does it still run, and how much larger is it?

    python benchmarks/small_sizes.py path/to/KernelBench/KernelBench --levels 1,2,3 \
        --out benchmarks/results/small_sizes_kernelbench.json

The references run in a worker process (one at a time, a timeout each), never in this one.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import platform
import random
import time
from collections import Counter
from pathlib import Path

from tritongym.errors import ProblemError
from tritongym.problems import load_directory
from tritongym.problems.sizes import INPUT_BUDGET, input_elements


def _run_reference(source: str) -> dict:
    """Build the reference model and run one forward (in the worker process)."""
    import torch

    namespace: dict = {"__name__": "reference"}
    exec(compile(source, "reference.py", "exec"), namespace)
    torch.manual_seed(0)
    start = time.perf_counter()
    init = namespace["get_init_inputs"]()
    model = namespace["Model"](*init)
    inputs = namespace["get_inputs"]()
    with torch.no_grad():
        output = model(*inputs)
    shape = list(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
    return {"seconds": round(time.perf_counter() - start, 3), "output": shape}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="the directory holding level1/, level2/ ...")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per reference forward")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--draw",
        type=int,
        default=None,
        help="draw each second size as a judge does, from this seed (default: the smallest)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    import torch
    import triton

    rows = []
    context = multiprocessing.get_context("spawn")
    pool = context.Pool(1)
    for level in (int(x) for x in args.levels.split(",")):
        for problem in load_directory(args.root / f"level{level}"):
            row = {"level": level, "problem": problem.name, "full_elements": input_elements(problem.source)[0]}
            try:
                small = problem.prepare(small=True)
            except ProblemError as exc:
                rows.append({**row, "outcome": "refused", "error": str(exc)})
                continue
            row |= {"small_elements": input_elements(small.source)[0], "shrunk": small.size_notice}
            job = pool.apply_async(_run_reference, (small.source,))
            try:
                row |= {"outcome": "ran", **job.get(args.timeout)}
            except multiprocessing.TimeoutError:
                pool.terminate()
                pool = context.Pool(1)
                row |= {"outcome": "timeout"}
            except Exception as exc:  # the reference's own error at the shrunk sizes
                row |= {"outcome": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            draw = None if args.draw is None else random.Random(f"{args.draw}:{problem.name}")
            resized = small.resized(draw) if row["outcome"] == "ran" else None
            if resized is not None:
                row |= {"second_elements": input_elements(resized.source)[0], "second": resized.size_notice}
                job = pool.apply_async(_run_reference, (resized.source,))
                try:
                    row |= {"second_outcome": "ran", "second_seconds": job.get(args.timeout)["seconds"]}
                except multiprocessing.TimeoutError:
                    pool.terminate()
                    pool = context.Pool(1)
                    row |= {"second_outcome": "timeout"}
                except Exception as exc:  # the reference refuses the second size: judged at one size
                    row |= {"second_outcome": "error", "second_error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    pool.terminate()
    growth = sorted(r["second_elements"] / max(r["small_elements"], 1) for r in rows if "second_elements" in r)
    ran = [r for r in rows if r["outcome"] == "ran"]
    summary = {
        "machine": platform.processor() or platform.machine(),
        "cpus": multiprocessing.cpu_count(),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__},
        "budget": INPUT_BUDGET,
        "outcomes": dict(Counter(r["outcome"] for r in rows)),
        "within_budget": sum(r.get("small_elements", 1 << 62) <= INPUT_BUDGET for r in rows),
        "shrunk": sum(bool(r.get("shrunk")) for r in rows),
        "median_reference_seconds": sorted(r["seconds"] for r in ran)[len(ran) // 2] if ran else None,
        "max_reference_seconds": max((r["seconds"] for r in ran), default=None),
        "second_size_outcomes": dict(Counter(r["second_outcome"] for r in rows if "second_outcome" in r)),
        "second_size_growth": {"median": growth[len(growth) // 2], "max": growth[-1]} if growth else None,
    }
    args.out.write_text(json.dumps({"summary": summary, "problems": rows}, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
