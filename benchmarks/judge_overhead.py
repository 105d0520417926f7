"""Per-candidate overhead of the evaluator: one warm sandbox, candidates one after another, timing
and profiling off (they measure the candidate, not the evaluator), every candidate with kernels of
its own (a new Triton cache key), as in RL.

    python benchmarks/judge_overhead.py --device cpu --rounds 2 --label judge

Run the same command on another checkout (``PYTHONPATH=<checkout>``) to compare designs on one
machine; the JSON records the wall time per evaluation (median and mean), per round, and the
median stages. On a GPU the judges' launcher store (Triton's C modules, docs/environment.md) starts
empty in a directory of its own unless ``--launcher-store`` names one (``off``: none, every job
builds its C modules as before): the first round shows a cold store, later rounds a warm one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch
import triton

from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.problems import load_bundled
from tritongym.solutions.variants import distinct_kernels

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the bundled set")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--label", default="judge", help="name of the design measured (file name suffix)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--launcher-store", default=None, help="the launcher store's root, or off (default: a new one)")
    args = parser.parse_args()
    store = args.launcher_store or tempfile.mkdtemp(prefix="tritongym-launchers-")
    os.environ["TRITONGYM_LAUNCHER_STORE"] = store
    config = EvalConfig(device=args.device, trials=args.trials, timing=False, profile=False)
    problems = [p.small() if args.device == "cpu" else p for p in load_bundled()]
    walls, results, rounds = [], [], []
    with LocalEnv(PoolConfig(devices=args.device, sandboxes_per_device=1)) as env:
        env.fingerprint()
        env.submit(problems[0], distinct_kernels(problems[0].solution), config).result()  # warm
        for _ in range(args.rounds):
            rounds.append([])
            for problem in problems:
                start = time.perf_counter()
                result = env.submit(problem, distinct_kernels(problem.solution), config).result()
                walls.append(time.perf_counter() - start)
                rounds[-1].append(walls[-1])
                results.append(result)
    stages = sorted({s for r in results for s in r.stage_seconds})
    report = {
        "benchmark": "judge_overhead",
        "label": args.label,
        "device": args.device,
        "trials": args.trials,
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "triton": triton.__version__,
            "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        },
        "evaluations": len(results),
        "ok": sum(r.verdict is Verdict.OK for r in results),
        "median_wall_s": round(statistics.median(walls), 4),
        "mean_wall_s": round(statistics.mean(walls), 4),
        "median_wall_s_per_round": [round(statistics.median(r), 4) for r in rounds],
        "launcher_store": "off" if store == "off" else ("given" if args.launcher_store else "new"),
        "median_stage_seconds": {
            s: round(statistics.median(r.stage_seconds[s] for r in results if s in r.stage_seconds), 4) for s in stages
        },
    }
    out = args.out or RESULTS / f"judge_overhead_{args.device}_{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
