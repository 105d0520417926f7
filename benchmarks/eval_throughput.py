"""Evaluations per minute: the bundled reference solutions, each in its own sandbox process.

    python benchmarks/eval_throughput.py --device cpu --jobs 1 2 --rounds 3

Writes benchmarks/results/eval_throughput_<device>.json with the machine and versions, and prints
a table. On the CPU problems run at their small sizes under Triton's interpreter; on a GPU at full size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch
import triton

from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.batch import Task, evaluate_many
from tritongym.evaluate.evaluator import resolve_device
from tritongym.problems import load_bundled

RESULTS = Path(__file__).parent / "results"


def machine(device: str) -> dict:
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def run(device: str, jobs: int, rounds: int, trials: int) -> dict:
    config = EvalConfig(device=device, trials=trials)
    problems = [p.small() if device == "cpu" else p for p in load_bundled()]
    tasks = [Task(p, p.solution, p.name) for p in problems] * rounds
    start = time.perf_counter()
    results = [r for _, r in evaluate_many(tasks, config, jobs)]
    wall = time.perf_counter() - start
    stages = sorted({s for r in results for s in r.stage_seconds})
    return {
        "jobs": jobs,
        "evaluations": len(results),
        "ok": sum(r.verdict is Verdict.OK for r in results),
        "wall_s": round(wall, 2),
        "evaluations_per_minute": round(60 * len(results) / wall, 1),
        "median_stage_seconds": {
            s: round(statistics.median(r.stage_seconds[s] for r in results if s in r.stage_seconds), 4) for s in stages
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1], help="concurrency levels")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the bundled set per level")
    parser.add_argument("--trials", type=int, default=5, help="correctness trials per evaluation")
    parser.add_argument(
        "--out", type=Path, default=None, help="result file (default: results/eval_throughput_<device>.json)"
    )
    args = parser.parse_args()
    device, _ = resolve_device(args.device)
    runs = [run(device, jobs, args.rounds, args.trials) for jobs in args.jobs]
    report = {
        "benchmark": "eval_throughput",
        "device": device,
        "trials": args.trials,
        "machine": machine(device),
        "runs": runs,
    }
    out = args.out or RESULTS / f"eval_throughput_{device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'jobs':>4} {'evals':>6} {'ok':>4} {'wall s':>7} {'evals/min':>10}  median stage seconds")
    for r in runs:
        stages = " ".join(f"{k}={v}" for k, v in r["median_stage_seconds"].items())
        counts = f"{r['jobs']:>4} {r['evaluations']:>6} {r['ok']:>4} {r['wall_s']:>7}"
        print(f"{counts} {r['evaluations_per_minute']:>10}  {stages}")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
