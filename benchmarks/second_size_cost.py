"""What the CPU judge's trial at a second size costs: the bundled solutions at their small sizes in one
warm pool, each judged as the shrunk problem it is (one trial more, at its second size) and with
nothing marked shrunk (the trials asked for, at one size), alternately, after a first round that
warms Triton's caches.

    python benchmarks/second_size_cost.py --out benchmarks/results/second_size_cost_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path

from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig
from tritongym.problems import load_bundled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds (after one that warms the caches)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch
    import triton

    config = EvalConfig(device="cpu", trials=args.trials)
    shrunk = [p.small() for p in load_bundled()]
    ways = {"one_size": [replace(p, shrunk={}) for p in shrunk], "two_sizes": shrunk}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    correctness: dict[str, list[float]] = {way: [] for way in ways}
    verdicts: dict[str, set[str]] = {way: set() for way in ways}
    with LocalEnv(PoolConfig(devices="cpu", sandboxes_per_device=1)) as env:
        env.fingerprint()
        for round_ in range(args.rounds + 1):
            for index in range(len(shrunk)):
                for way, problems in ways.items():
                    problem = problems[index]
                    started = time.perf_counter()
                    result = env.submit(problem, problem.solution, config).result()
                    if round_:
                        seconds[way].append(time.perf_counter() - started)
                        correctness[way].append(result.stage_seconds.get("correctness", 0.0))
                        verdicts[way].add(f"{result.verdict.value} {result.trials_passed}/{result.trials}")
    summary = {
        "machine": platform.machine(),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__},
        "candidates": len(shrunk),
        "trials": args.trials,
        "rounds": args.rounds,
        **{
            way: {
                "verdicts": sorted(verdicts[way]),
                "mean_wall_s": round(statistics.mean(seconds[way]), 4),
                "mean_correctness_s": round(statistics.mean(correctness[way]), 4),
            }
            for way in ways
        },
    }
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
