"""Evaluations per minute on the bundled reference solutions: warm sandboxes (the local pool)
against a fresh process per evaluation, same machine, same run.

    python benchmarks/eval_throughput.py --device cpu --jobs 1 2 --rounds 3

Every task's kernels get a distinct source (a comment on each @triton.jit def line), so Triton's
cache never spares a compilation: as in RL, where candidates differ.

Writes benchmarks/results/eval_throughput_<device>.json with the machine and versions, and prints a
table. On the CPU problems run at their small sizes under Triton's interpreter; on a GPU at full size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import triton

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.evaluate.evaluator import resolve_device
from tritongym.problems import load_bundled
from tritongym.solutions.variants import distinct_kernels

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


def summarise(mode: str, jobs: int, results: list, wall: float) -> dict:
    stages = sorted({s for r in results for s in r.stage_seconds})
    return {
        "mode": mode,
        "jobs": jobs,
        "evaluations": len(results),
        "ok": sum(r.verdict is Verdict.OK for r in results),
        "wall_s": round(wall, 2),
        "evaluations_per_minute": round(60 * len(results) / wall, 1),
        "median_stage_seconds": {
            s: round(statistics.median(r.stage_seconds[s] for r in results if s in r.stage_seconds), 4) for s in stages
        },
    }


def run_fresh(tasks: list[Task], config: EvalConfig, jobs: int) -> dict:
    """The baseline: every evaluation starts its own process."""
    start = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda t: evaluate(t.problem, t.candidate, config), tasks))
    return summarise("fresh process", jobs, results, time.perf_counter() - start)


def run_warm(tasks: list[Task], config: EvalConfig, device: str, jobs: int) -> dict:
    """The local pool; its sandboxes are started (and warmed) before the clock starts."""
    with LocalEnv(PoolConfig(devices=device, sandboxes_per_device=jobs)) as env:
        env.fingerprint()
        warmup = [env.submit(t.problem, distinct_kernels(t.candidate), config) for t in tasks[: env.slots]]
        [f.result() for f in warmup]
        start = time.perf_counter()
        results = [r for _, r in env.evaluate_many(tasks, config)]
        wall = time.perf_counter() - start
    return summarise("warm sandboxes", jobs, results, wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1], help="sandboxes at once")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the bundled set per level")
    parser.add_argument("--trials", type=int, default=5, help="correctness trials per evaluation")
    parser.add_argument("--modes", nargs="+", choices=["fresh", "warm"], default=["fresh", "warm"])
    parser.add_argument("--out", type=Path, default=None, help="default: results/eval_throughput_<device>.json")
    args = parser.parse_args()
    device, _ = resolve_device(args.device)
    config = EvalConfig(device=device, trials=args.trials)
    problems = [p.small() if device == "cpu" else p for p in load_bundled()]
    runs = []
    for jobs in args.jobs:
        for mode in args.modes:
            tasks = [Task(p, distinct_kernels(p.solution), p.name) for _ in range(args.rounds) for p in problems]
            runs.append(run_fresh(tasks, config, jobs) if mode == "fresh" else run_warm(tasks, config, device, jobs))
    report = {"benchmark": "eval_throughput", "device": device, "trials": args.trials, "machine": machine(device)}
    report["runs"] = runs
    out = args.out or RESULTS / f"eval_throughput_{device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'mode':<15} {'jobs':>4} {'evals':>6} {'ok':>4} {'wall s':>7} {'evals/min':>10}  median stage seconds")
    for r in runs:
        stages = " ".join(f"{k}={v}" for k, v in r["median_stage_seconds"].items())
        head = f"{r['mode']:<15} {r['jobs']:>4} {r['evaluations']:>6} {r['ok']:>4} {r['wall_s']:>7}"
        print(f"{head} {r['evaluations_per_minute']:>10}  {stages}")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
