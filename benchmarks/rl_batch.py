"""Throughput on an RL-shaped batch: many candidates with kernels of their own, about half of them
failing, judged by the local pool with timing and profiling on, pool start included.

    python benchmarks/rl_batch.py --device cuda --candidates 200 --sandboxes 4 --out OUT/rl_batch.json
    python benchmarks/rl_batch.py --device cuda --devices cuda:0,1 --sandboxes 4 ...   # two GPUs

Candidates cycle through the bundled problems; each is one of four kinds, every copy with a new
Triton cache key (a comment on each ``@triton.jit`` line), as in RL where no two samples are alike:

* ``correct``: the bundled solution (half of the batch);
* ``compile_error``: the solution with an attribute ``tl`` does not have in its first kernel;
* ``mismatch``: the solution's output changed after its kernels ran (every tensor of it, in its dtype);
* ``runtime_error``: forward raises after its kernels ran.

Every failing kind ends its runner (a fresh one per candidate is the design), so replacement is in
the measurement. The JSON has the machine and versions, the verdict counts per kind (a kind whose
verdicts are not what it was made for is reported, not hidden), the wall time from the pool's
creation to the last result, seconds per candidate amortised over the batch (and without the pool's
start: until its last sandbox took its first task; each part of a judge's start, the median over the
sandboxes, in ``judge_startup_seconds``), the median and the sum
over the batch of each evaluation stage (``gpu_lock_wait`` holds every wait for this GPU's lock,
``gpu_lock_wait_exclusive`` the timings' own; ``gpu_lock_cover_start`` and ``gpu_lock_cover_end`` the
seconds runners' starts and ends held it shared; ``runner_wait`` the part of ``import`` the job waited
for its runner (a spare still starting, or none yet); ``runner_start`` the start of the job's runner, from
its fork to its Hello, and ``runner_start_<part>`` its parts: ``serve`` the fork, ``context`` its CUDA
context, ``warm`` Triton's driver and the profiler, ``hardened`` its confinement; ``runner_end`` its
end after the job's stages: killed, its files swept, its output read), the seconds the
GPU was held exclusively (timing and profiling, one candidate at a time) against the wall time, and
the batch after the pool's start as its critical path's two parts (``critical_path``: the GPU held
exclusively per GPU, and the rest of the wall with the shared work it carries and how many judges did
it at once on average), what the timing's precision was: its stop reasons, repetitions, and the speedup's 95% interval
half-width relative to the speedup. ``speedups`` lists every candidate's speedup in the batch's order
(None where it has none): the batch is the same in every run, so two runs (two judges' code) compare
candidate by candidate (``--compare``: the ratios of the second run's speedups to the first's).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import time
from collections import Counter
from pathlib import Path

import torch
import triton

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig
from tritongym.problems import Problem, load_bundled
from tritongym.solutions.variants import distinct_kernels

KINDS = ("correct", "compile_error", "correct", "mismatch", "correct", "runtime_error")
"""The cycle of candidate kinds: half correct, the rest failing in three ways."""
EXPECTED = {"correct": {"ok"}, "compile_error": {"compile_error"}, "mismatch": {"mismatch"},
            "runtime_error": {"runtime_error"}}  # fmt: skip
"""The verdicts each kind is made for."""

_WRAP = """

def _spoiled(out):
    if isinstance(out, (tuple, list)):
        return type(out)(_spoiled(o) for o in out)
    if not isinstance(out, torch.Tensor):
        return out
    if out.dtype == torch.bool:
        return ~out
    return out * 1.5 + 1.0 if out.is_floating_point() else out + 1


class _Judged(ModelNew):
    def forward(self, *args):
        out = super().forward(*args)
        {body}


ModelNew = _Judged
"""


def candidate(problem: Problem, kind: str) -> str:
    """A candidate of ``kind`` for a bundled problem (from its known solution)."""
    source = problem.solution or ""
    if kind == "compile_error":
        lines = source.splitlines()
        jit = next(i for i, line in enumerate(lines) if line.strip() == "@triton.jit")
        body = next(i for i in range(jit + 1, len(lines)) if lines[i].rstrip().endswith(":")) + 1
        indent = lines[body][: len(lines[body]) - len(lines[body].lstrip())]
        lines.insert(body, f"{indent}tl.no_such_language_feature()")
        source = "\n".join(lines) + "\n"
    elif kind == "mismatch":
        source += _WRAP.format(body="return _spoiled(out)")
    elif kind == "runtime_error":
        source += _WRAP.format(body='raise ValueError("the candidate gave up after its kernels ran")')
    return distinct_kernels(source)


def batch(problems: list[Problem], count: int) -> list[tuple[str, Task]]:
    """``count`` (kind, task) pairs cycling through the problems and the kinds."""
    pairs = zip(itertools.cycle(problems), itertools.cycle(KINDS), strict=False)
    return [(kind, Task(p, candidate(p, kind), f"{p.name}:{kind}")) for p, kind in itertools.islice(pairs, count)]


def machine(device: str) -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "torch": torch.__version__, "triton": triton.__version__}  # fmt: skip
    if device == "cuda":
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def run(args: argparse.Namespace) -> dict:
    problems = [p.small() if args.device == "cpu" else p for p in load_bundled() if p.solution]
    kinds_tasks = batch(problems, args.candidates)
    config = EvalConfig(device=args.device, trials=args.trials, timing=args.device != "cpu",
                        profile=args.device != "cpu", timing_budget_s=args.timing_budget)  # fmt: skip
    devices = args.devices or args.device
    started = time.perf_counter()
    with LocalEnv(
        PoolConfig(devices=devices, sandboxes_per_device=args.sandboxes, runner_work_queues=args.runner_work_queues)
    ) as env:
        results = env.evaluate_batch([task for _, task in kinds_tasks], config)
        slots, startups = env.slots, env.sandbox_startups
    wall = time.perf_counter() - started
    by_kind: dict[str, Counter] = {}
    for (kind, _), result in zip(kinds_tasks, results, strict=True):
        by_kind.setdefault(kind, Counter())[str(result.verdict.value)] += 1
    unexpected = {k: dict(c) for k, c in by_kind.items() if set(c) - EXPECTED[k]}
    stages = sorted({s for r in results for s in r.stage_seconds})
    sums = {s: round(sum(r.stage_seconds.get(s, 0.0) for r in results), 2) for s in stages if s != "queue"}
    exclusive = sums.get("timing", 0.0) + sums.get("profiling", 0.0)
    # every task is queued when the pool is made: the first task each sandbox takes waited for its start
    ready = sorted(r.stage_seconds.get("queue", 0.0) for r in results)[: min(slots, len(results))]
    return {
        "benchmark": "rl_batch",
        "device": args.device,
        "devices": devices,
        "sandboxes": slots,
        "candidates": len(results),
        "trials": args.trials,
        "timing_budget_s": args.timing_budget,
        "runner_work_queues": args.runner_work_queues,
        "machine": machine(args.device),
        "verdicts_by_kind": {k: dict(c) for k, c in by_kind.items()},
        "unexpected": unexpected,
        "wall_s": round(wall, 2),
        "seconds_per_candidate": round(wall / len(results), 4),
        "pool_ready_s": round(ready[-1], 2),
        "seconds_per_candidate_after_start": round((wall - ready[-1]) / len(results), 4),
        "judge_startup_seconds": {  # the median over the sandboxes of each part of a judge's start
            part: round(statistics.median(s[part] for s in startups if part in s), 4)
            for part in sorted({part for s in startups for part in s})
        },
        "median_stage_seconds": {
            s: round(statistics.median(r.stage_seconds[s] for r in results if s in r.stage_seconds), 4) for s in stages
        },
        "sum_stage_seconds": sums,
        "gpu_exclusive_s": round(exclusive, 2),
        "gpu_exclusive_share": round(exclusive / wall, 3),
        "critical_path": critical_path(wall, ready[-1], exclusive, sums, gpu_count(devices)),
        "timing": timing_precision(results),
        "speedups": [r.speedup for r in results],
    }


def gpu_count(devices: str) -> int:
    """GPUs of a pool's ``devices`` ('cuda:0,1': 2; 'cuda': every visible one); 1 on the CPU (one lane set)."""
    if devices.startswith("cuda:"):
        return len(devices.removeprefix("cuda:").split(","))
    return max(torch.cuda.device_count(), 1) if devices == "cuda" else 1


def critical_path(wall: float, ready: float, exclusive: float, sums: dict, gpus: int) -> dict:
    """The batch after the pool's start as its two parts (BENCHMARKS.md, session 14): the GPU held
    exclusively (timing and profiling, one candidate at a time on each GPU: ``exclusive_s`` per GPU), while
    the other judges of its GPU wait for the lock for almost every stage; and the rest of the wall
    (``without_timing_s``), which carries the jobs' shared work (``shared_work_s``: their judge-seconds
    less their lock waits and the exclusive part) at ``judges_at_once`` judges on average."""
    after = wall - ready
    per_gpu = exclusive / max(gpus, 1)
    shared = sums.get("total", 0.0) - sums.get("gpu_lock_wait", 0.0) - exclusive
    without = after - per_gpu
    return {"after_start_s": round(after, 2), "exclusive_s": round(per_gpu, 2), "without_timing_s": round(without, 2),
            "shared_work_s": round(shared, 2),
            "judges_at_once": round(shared / (without * max(gpus, 1)), 2) if without > 0 else None}  # fmt: skip


def paired(first: dict, second: dict) -> dict:
    """The ratios of ``second``'s speedups to ``first``'s, candidate by candidate (both timed): their
    count, median, 5th and 95th percentiles (rounded down), and the medians' ratio of each problem."""
    pairs = [(a, b) for a, b in zip(first["speedups"], second["speedups"], strict=True) if a and b]
    if not pairs:
        return {"paired": 0}
    ratios = sorted(b / a for a, b in pairs)
    last = len(ratios) - 1
    return {"paired": len(ratios), "median": round(statistics.median(ratios), 4),
            "p5": round(ratios[int(0.05 * last)], 4), "p95": round(ratios[int(0.95 * last)], 4),
            "min": round(ratios[0], 4), "max": round(ratios[-1], 4)}  # fmt: skip


def timing_precision(results: list) -> dict:
    """How precise the timed candidates' speedups were: the stop reasons, the repetitions, the 95%
    interval's half-width over the speedup (median, 90th percentile rounded down, largest), and the
    speedups themselves (median, 10th and 90th percentiles: the same solutions in every run)."""
    timed = [r for r in results if r.timing is not None]
    widths = sorted((r.timing.speedup_ci[1] - r.timing.speedup_ci[0]) / (2 * r.speedup)
                    for r in timed if r.speedup)  # fmt: skip
    if not widths:
        return {"timed": len(timed)}
    speedups = sorted(r.speedup for r in timed if r.speedup)  # the correct kinds' own solutions: compare runs
    return {
        "timed": len(timed),
        "with_speedup": len(widths),
        "stopped": dict(Counter(r.timing.stopped for r in timed)),
        "median_reps": statistics.median(r.timing.reps for r in timed),
        "invalid_reps": sum(r.timing.invalid_reps for r in timed),
        "contended_reps": sum(r.timing.contended_reps for r in timed),
        "ci_half_width": {"median": round(statistics.median(widths), 4),
                          "p90": round(widths[int(0.9 * (len(widths) - 1))], 4), "max": round(widths[-1], 4)},
        "speedup": {"median": round(statistics.median(speedups), 4), "p10": round(speedups[len(speedups) // 10], 4),
                    "p90": round(speedups[int(0.9 * (len(speedups) - 1))], 4)},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    parser.add_argument("--devices", default="", help="the pool's devices, e.g. cuda:0,1 (default: --device)")
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--sandboxes", type=int, default=None, help="sandboxes per GPU (CPU: in all)")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument(
        "--runner-work-queues",
        type=int,
        default=None,
        help="PoolConfig.runner_work_queues (every runner that many; default: one queue where the problem's "
        "reference ran on one stream, else the judge's setting)",
    )
    parser.add_argument("--timing-budget", type=float, default=0.1,
                        help="seconds of timing per candidate (an RL batch's; BENCHMARKS.md)")  # fmt: skip
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--compare",
        type=Path,
        nargs=2,
        metavar=("FIRST", "SECOND"),
        help="print the ratios of SECOND's speedups to FIRST's (two results of this script)",
    )
    args = parser.parse_args()
    if args.compare:
        first, second = (json.loads(path.read_text()) for path in args.compare)
        print(json.dumps(paired(first, second)))
        return
    if args.out is None:
        parser.error("--out is needed to run a batch")
    report = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    shown = ("candidates", "sandboxes", "wall_s", "seconds_per_candidate", "pool_ready_s", "gpu_exclusive_s",
             "gpu_exclusive_share")  # fmt: skip
    print(json.dumps({k: report[k] for k in shown}))
    print("median stages:", json.dumps(report["median_stage_seconds"]))
    print("summed stages:", json.dumps(report["sum_stage_seconds"]))
    print("critical path:", json.dumps(report["critical_path"]))
    print("timing:", json.dumps(report["timing"]))
    print("verdicts by kind:", json.dumps(report["verdicts_by_kind"]))
    if report["unexpected"]:
        print("kinds with verdicts they were not made for:", json.dumps(report["unexpected"]))


if __name__ == "__main__":
    main()
