"""A/A timing: the reference's own code as the candidate, so the right speedup is known.

For every bundled problem the candidate subclasses the reference and adds one launch of a one-element
Triton kernel per forward (the judge refuses a candidate without Triton). Its speedup should be the
reference's time over the reference's time plus that launch's GPU time (profiled, reported as
``token_us``); ``speedup x (1 + token/reference)`` is the A/A ratio, 1.00 for an unbiased judge.
Each problem is evaluated ``--repeats`` times, which also shows how far apart repeated speedups are.

    python benchmarks/timing_aa.py --out benchmarks/results/timing_aa_h100.json

Needs a CUDA device; prints a table and writes one JSON file with the machine and versions.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path

import torch
import triton

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig
from tritongym.problems import load_bundled

TOKEN = """

import triton as _aa_triton
import triton.language as _aa_tl


@_aa_triton.jit
def _aa_token(ptr):
    _aa_tl.store(ptr, 1.0)


class {entry}New({entry}):
    def forward(self, *args):
        flag = torch.empty(1, device=args[0].device, dtype=torch.float32)
        _aa_token[(1,)](flag)
        return super().forward(*args)
"""


def aa_source(problem) -> str:
    return problem.source + TOKEN.format(entry=problem.entry_point)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--repeats", type=int, default=3, help="evaluations of each problem")
    parser.add_argument("--budget", type=float, default=4.0, help="timing budget per evaluation (s)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("needs a CUDA device")
    config = EvalConfig(device="cuda", torch_compute="allow", timing_budget_s=args.budget)
    problems = load_bundled()
    tasks = [Task(p, aa_source(p), f"{p.name} #{i}") for p in problems for i in range(args.repeats)]
    rows: dict[str, list] = {p.name: [] for p in problems}
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        for task, result in env.evaluate_many(tasks, config):
            token = [k.time_us for k in result.kernels if k.own]
            timing = result.timing
            entry = {"verdict": str(result.verdict), "speedup": result.speedup}
            if timing is not None and result.speedup:
                token_us = token[0] if token else 0.0
                reference_us = timing.reference_ms * 1e3
                entry |= {
                    "speedup_ci": timing.speedup_ci,
                    "reference_us": round(reference_us, 2),
                    "candidate_us": round(timing.candidate_ms * 1e3, 2),
                    "token_us": round(token_us, 2),
                    "aa_ratio": round(result.speedup * (1 + token_us / reference_us), 4),
                    "reps": timing.reps,
                    "stopped": timing.stopped,
                    "timing_s": result.stage_seconds.get("timing"),
                }
            else:
                entry["feedback"] = result.feedback[:300]
            rows[task.problem.name].append(entry)
    print(f"{'problem':32s} {'ref us':>9s} {'token us':>8s} {'A/A ratios':>28s} {'spread':>7s}")
    summary = {}
    for name, entries in rows.items():
        ratios = [e["aa_ratio"] for e in entries if "aa_ratio" in e]
        spread = max(ratios) / min(ratios) - 1 if ratios else None
        summary[name] = {"aa_ratios": ratios, "median": statistics.median(ratios) if ratios else None,
                         "spread": spread}  # fmt: skip
        first = next((e for e in entries if "aa_ratio" in e), entries[0])
        print(
            f"{name:32s} {first.get('reference_us', 0):9.1f} {first.get('token_us', 0):8.2f} "
            f"{' '.join(f'{r:.4f}' for r in ratios) or first.get('verdict'):>28s} {spread or 0:7.4f}"
        )
    all_ratios = [r for s in summary.values() for r in s["aa_ratios"]]
    report = {
        "machine": {
            "gpu": torch.cuda.get_device_name(0),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "triton": triton.__version__,
        },
        "config": {"timing_target": config.timing_target, "budget_s": args.budget, "repeats": args.repeats},
        "median_aa_ratio": statistics.median(all_ratios) if all_ratios else None,
        "problems": summary,
        "evaluations": rows,
    }
    print(f"median A/A ratio over all: {report['median_aa_ratio']}")
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
