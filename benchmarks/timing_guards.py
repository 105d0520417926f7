"""Timing, coverage and guards on a GPU, in one warm sandbox:

1. the bundled solutions at full size: verdict, speedup with its 95% CI, coverage, repetitions and
   the cost of every stage (compile and correctness, guards, timing, profiling);
2. the timing of one bundled solution repeated (default 5 times): how far apart the speedups are;
3. every exploit in tests/adversarial/candidates: the verdict it gets.

    python benchmarks/timing_guards.py --out benchmarks/results/timing_guards_h200.json

Needs a CUDA device; prints tables and writes one JSON file with the machine and versions.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from dataclasses import asdict
from pathlib import Path

import torch
import triton

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig
from tritongym.problems import find_problem, load_bundled

EXPLOITS = Path(__file__).parents[1] / "tests" / "adversarial" / "candidates"
EXPLOIT_PROBLEM = {"lazy_linear": "linear_relu"}
"""Exploits written for another problem than vector_add."""
STAGES = ("first_trial", "correctness", "guards", "timing", "profiling", "total")


def row(result) -> dict:
    timing = result.timing
    return {
        "problem": result.problem,
        "verdict": str(result.verdict),
        "speedup": result.speedup,
        "speedup_ci": timing.speedup_ci if timing else None,
        "spread": timing.spread if timing else None,
        "reference_us": round(timing.reference_ms * 1e3, 2) if timing else None,
        "candidate_us": round(timing.candidate_ms * 1e3, 2) if timing else None,
        "reps": timing.reps if timing else None,
        "stopped": timing.stopped if timing else None,
        "coverage": result.coverage,
        "kernels": [asdict(k) for k in result.kernels],
        "findings": [f.check for f in result.findings],
        "stage_seconds": {k: result.stage_seconds.get(k) for k in STAGES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--repeats", type=int, default=5, help="timings of the stability problem")
    parser.add_argument("--stability-problem", default="softmax", help="bundled problem timed repeatedly")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("needs a CUDA device")
    config = EvalConfig(device="cuda")
    report: dict = {
        "machine": {
            "gpu": torch.cuda.get_device_name(0),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "triton": triton.__version__,
        },
        "config": {"trials": config.trials, "timing_target": config.timing_target, "budget_s": config.timing_budget_s},
    }
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        bundled = [Task(p, p.solution, p.name) for p in load_bundled()]
        report["bundled"] = [row(r) for _, r in env.evaluate_many(bundled, config)]
        print(f"{'problem':32s} {'verdict':8s} {'speedup':>8s} {'95% CI':>15s} {'coverage':>8s} {'reps':>6s} timing_s")
        for r in report["bundled"]:
            ci = "-".join(f"{x:.3f}" for x in r["speedup_ci"] or [])
            print(
                f"{r['problem']:32s} {r['verdict']:8s} {r['speedup'] or 0:8.3f} {ci:>15s} {r['coverage'] or 0:8.3f} "
                f"{r['reps'] or 0:6d} {r['stage_seconds']['timing']}"
            )

        problem = find_problem(args.stability_problem)
        repeats = [Task(problem, problem.solution, f"repeat {i}") for i in range(args.repeats)]
        speedups = [r.speedup for _, r in env.evaluate_many(repeats, config)]
        spread = max(speedups) / min(speedups) - 1
        report["stability"] = {"problem": problem.name, "speedups": speedups, "max_over_min_minus_1": spread}
        print(f"\n{problem.name} timed {args.repeats}x: {speedups}; max/min - 1 = {spread:.4f}")

        exploits = sorted(EXPLOITS.glob("*.py"))
        tasks = [
            Task(find_problem(EXPLOIT_PROBLEM.get(f.stem, "vector_add")).small(), f.read_text(), f.stem)
            for f in exploits
        ]
        report["exploits"] = {}
        for task, result in env.evaluate_many(tasks, config):
            report["exploits"][task.label] = {"verdict": str(result.verdict), "coverage": result.coverage}
        print("\nexploit verdicts:")
        for name, entry in report["exploits"].items():
            print(f"  {name:32s} {entry['verdict']}")
    report["stability"]["mean_speedup"] = statistics.fmean(report["stability"]["speedups"])
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
