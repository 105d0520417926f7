"""Timing under contention: a few bundled problems' solutions timed alone in a pool of several
sandboxes on one GPU, then again while the pool's other sandboxes start runners, compile, run
trials, guards and timing of other candidates (every bundled solution, each copy with its own
Triton cache key, half of them timed). This is how an RL batch uses a GPU (4 sandboxes on one GPU in
the learning runs), and where a speedup of 1.5e6 was once measured (benchmarks/results/learning_gpu).

    python benchmarks/timing_contention.py --out /tmp/timing_contention.json
    python benchmarks/timing_contention.py --problems softmax rmsnorm_fp16 --repeats 5 --sandboxes 4 --budget 0.3

Prints one line per evaluation and a summary per problem and mode (``solo``, ``busy``): the median,
lowest and highest speedup, the busy/solo ratio of medians, how many timings gave no speedup
(``timing_untrusted``), the valid, invalid and contended repetitions, the hand-off measured while
timing against the clean one measured when the judge started, and why timing stopped. Writes
every row, the summary, the settings, the machine and the versions as JSON to ``--out``.

On a sound judge: busy speedups within a few percent of solo ones, never ``implausible_speedup``,
``untrusted`` 0 for these honest kernels, ``contended_reps`` near 0 (the other sandboxes' GPU work
holds the GPU's lock shared, so it waits while a candidate is timed) and ``hand_off_us`` near
``clean_hand_off_us``. Build-free: the bundled problems only; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import time
from pathlib import Path

import torch
import triton

from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig
from tritongym.problems import find_problem, load_bundled
from tritongym.solutions.variants import distinct_kernels

DEFAULT_PROBLEMS = ("vector_add", "softmax", "scale_tanh_clamp_mean", "rmsnorm_fp16")


def row(mode: str, problem: str, result) -> dict:
    timing = result.timing
    fields = ("reps", "invalid_reps", "contended_reps", "stopped", "hand_off_us", "clean_hand_off_us",
              "subtracted_us", "input_sets", "speedup_ci", "reference_ms", "candidate_ms")  # fmt: skip
    return {
        "mode": mode,
        "problem": problem,
        "verdict": str(result.verdict.value),
        "speedup": result.speedup,
        "findings": [f.check for f in result.findings],
        "timing_s": result.stage_seconds.get("timing"),
        **({name: getattr(timing, name) for name in fields} if timing is not None else {}),
    }


def summary(rows: list[dict]) -> list[dict]:
    out = []
    for problem in dict.fromkeys(r["problem"] for r in rows):
        solo_median = None
        for mode in ("solo", "busy"):
            mine = [r for r in rows if r["problem"] == problem and r["mode"] == mode]
            speedups = [r["speedup"] for r in mine if r["speedup"] is not None]
            median = statistics.median(speedups) if speedups else None
            solo_median = median if mode == "solo" else solo_median
            timed = [r for r in mine if "reps" in r]
            out.append({
                "problem": problem,
                "mode": mode,
                "evaluations": len(mine),
                "speedup_median": median,
                "speedup_low": min(speedups, default=None),
                "speedup_high": max(speedups, default=None),
                "busy_over_solo": round(median / solo_median, 4) if mode == "busy" and median and solo_median else None,
                "untrusted": sum("timing_untrusted" in r["findings"] for r in mine),
                "implausible": sum("implausible_speedup" in r["findings"] for r in mine),
                "reps_median": statistics.median(r["reps"] for r in timed) if timed else None,
                "invalid_reps_total": sum(r["invalid_reps"] for r in timed),
                "contended_reps_total": sum(r["contended_reps"] for r in timed),
                "hand_off_us_median": statistics.median(r["hand_off_us"] for r in timed) if timed else None,
                "clean_hand_off_us_median": statistics.median(r["clean_hand_off_us"] for r in timed) if timed else None,
                "stopped": sorted({r["stopped"] for r in timed}),
            })  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS), help="bundled problems timed")
    parser.add_argument("--repeats", type=int, default=3, help="evaluations of each problem in each mode")
    parser.add_argument("--sandboxes", type=int, default=4, help="sandboxes of the pool on the GPU")
    parser.add_argument("--budget", type=float, default=0.3, help="timing budget per evaluation (s)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("needs a CUDA device")
    config = EvalConfig(device="cuda", timing_budget_s=args.budget)
    untimed = EvalConfig(device="cuda", timing=False)
    targets = [find_problem(name) for name in args.problems]
    busy = load_bundled()
    rows: list[dict] = []
    began = time.perf_counter()
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=args.sandboxes)) as env:
        for problem in targets:  # compiled once, so that solo and busy time the same warm kernels
            env.submit(problem, problem.solution, config).result()
        for _ in range(args.repeats):
            for problem in targets:  # solo: nothing else queued
                rows.append(row("solo", problem.name, env.submit(problem, problem.solution, config).result()))
                print(json.dumps(rows[-1]), flush=True)
        others = itertools.cycle(busy)
        flip = itertools.count()
        for _ in range(args.repeats):
            for problem in targets:  # busy: the other sandboxes take the tasks queued around the target
                futures = []
                for _ in range(args.sandboxes - 1):
                    other = next(others)
                    futures.append(env.submit(other, distinct_kernels(other.solution),
                                              config if next(flip) % 2 else untimed))  # fmt: skip
                target = env.submit(problem, problem.solution, config)
                for _ in range(args.sandboxes - 1):
                    other = next(others)
                    futures.append(env.submit(other, distinct_kernels(other.solution), untimed))
                rows.append(row("busy", problem.name, target.result()))
                print(json.dumps(rows[-1]), flush=True)
                for future in futures:
                    future.result()
    summarised = summary(rows)
    for line in summarised:
        print(json.dumps(line))
    machine = {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
               "triton": triton.__version__, "gpu": torch.cuda.get_device_name(0)}  # fmt: skip
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report = {"machine": machine, "settings": settings, "wall_s": round(time.perf_counter() - began, 1),
              "summary": summarised, "rows": rows}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
