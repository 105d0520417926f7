"""At-scale check on KernelBench: Inductor's own code (or the problem's own PyTorch) as the candidate.

For one KernelBench level (optionally a range of ids), two commands run in turn:

1. ``tritongym solutions inductor <level dir> --out OUT/solutions``: torch.compile's generated Triton
   code of every problem, made standalone (problems it cannot make are skipped, with their reason);
2. ``tritongym bench --policy scripted --script replay --solutions OUT/solutions --baseline compile``:
   each solution evaluated at the problem's own size with timing and profiling on.

The candidate *is* what the baseline runs, so this is an A/A test of the judge at scale: every
correct solution should be ``ok``, its speedup near 1.00 (the spread is the timing noise a reward
sees), and its coverage the share of the forward's GPU time in Inductor's Triton kernels (library
calls, cuBLAS and cuDNN, are not the candidate's own). OUT/summary.json and OUT/report.md hold the
generation's outcome, the verdict counts (every verdict other than ok listed with its feedback), the
coverage and speedup distributions and the cost per candidate (wall time over candidates, and the
mean of each evaluation stage). Re-running the same command resumes the bench run.

    python benchmarks/kernelbench_inductor.py --problems build/KernelBench/level1 --ids 1-34 --out OUT/l1a

With ``--candidate lazy`` the candidate is instead the problem's own PyTorch code plus one trivial
Triton launch (``ModelNew`` subclasses ``Model``, calls its forward, then launches a one-element
kernel), timed against eager PyTorch: correct and honest by construction, so every problem should be
``ok`` with a small coverage and a speedup just under 1.00, at the problem's own size, through the
default pool. Any other verdict (an out-of-memory of the judge's, a library stream taken for a side
stream, a timeout) is the judge's problem: this is issue 12's memory and stream check.

The problems come from a KernelBench checkout (``git --git-dir=<KernelBench.git> archive HEAD
KernelBench | tar -x -C build/`` gives build/KernelBench/level1..4). ``bash benchmarks/gpu_run.sh
kernelbench LEVEL IDS`` runs it on a GPU.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console

MAX_SOURCE_BYTES = 4 << 20
"""Inductor's code for a large model (many kernels, each with its metadata) can outgrow the default
limit on a candidate's source (256 KiB); this check is about the judge, not that limit."""


def _run(command: list[str], timeout_s: float) -> tuple[int, float]:
    """Run a step in a session of its own; past its time, the whole session (its compiling children
    included) is killed, and what it wrote so far is summarised."""
    print("$", " ".join(command), flush=True)
    started = time.monotonic()
    process = subprocess.Popen(command, start_new_session=True)
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        print(f"step stopped after {timeout_s:.0f} s; summarising what it wrote", flush=True)
        code = 124
    return code, time.monotonic() - started


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    values = sorted(values)

    def at(q: float) -> float:
        position = q * (len(values) - 1)
        low = int(position)
        high = min(low + 1, len(values) - 1)
        return values[low] + (values[high] - values[low]) * (position - low)

    return {
        "count": len(values),
        "min": values[0],
        "p5": at(0.05),
        "p25": at(0.25),
        "median": at(0.5),
        "p75": at(0.75),
        "p95": at(0.95),
        "max": values[-1],
        "mean": statistics.fmean(values),
    }


def summarize(solutions: Path, run: Path, generate_s: float, bench_s: float) -> dict[str, Any]:
    """The check's summary from the generation's summary.json and the bench run's trajectories."""
    generation = json.loads((solutions / "summary.json").read_text()) if (solutions / "summary.json").exists() else {}
    records = []
    trajectories = run / "trajectories.jsonl"
    if trajectories.exists():
        latest = {}
        for line in trajectories.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                latest[(row["problem"], row["sample"], row["turn"])] = row
        records = list(latest.values())
    verdicts = Counter(r["verdict"] for r in records)
    results = [r.get("result") or {} for r in records]
    ok = [res for r, res in zip(records, results, strict=True) if r["verdict"] == "ok"]
    speedups = [res["speedup"] for res in ok if res.get("speedup") is not None]
    coverages = [res["coverage"] for res in ok if res.get("coverage") is not None]
    stages: dict[str, list[float]] = {}
    for res in results:
        for stage, seconds in (res.get("stage_seconds") or {}).items():
            stages.setdefault(stage, []).append(seconds)
    not_ok = [
        {
            "problem": r["problem"],
            "verdict": r["verdict"],
            "feedback": ((res.get("feedback") or r.get("error") or "").strip().splitlines() or [""])[0][:300],
        }
        for r, res in zip(records, results, strict=True)
        if r["verdict"] != "ok"
    ]
    untimed = [
        {"problem": r["problem"], "why": _untrusted(res)}
        for r, res in zip(records, results, strict=True)
        if r["verdict"] == "ok" and _untrusted(res)
    ]
    return {
        "machine": platform.node(),
        "generation": {
            "problems": generation.get("problems_total"),
            "done": len(generation.get("problems", [])),
            "written": generation.get("written"),
            "skipped": [
                {"problem": p["problem"], "reason": p["reason"]}
                for p in generation.get("problems", [])
                if p["status"] == "skipped"
            ],
            "wall_s": round(generate_s, 1),
            "per_problem_s": round(generate_s / max(1, len(generation.get("problems", []))), 2),
        },
        "candidates": len(records),
        "verdicts": dict(verdicts.most_common()),
        "not_ok": not_ok,
        "ok_without_speedup": untimed,
        "speedup": _quantiles(speedups),
        "coverage": _quantiles(coverages),
        "cost": {
            "bench_wall_s": round(bench_s, 1),
            "per_candidate_s": round(bench_s / len(records), 3) if records else None,
            "stage_mean_s": {k: round(statistics.fmean(v), 3) for k, v in sorted(stages.items())},
        },
    }


def _untrusted(result: dict[str, Any]) -> str:
    """Why a timed result has no speedup (its ``timing_untrusted`` finding); "" where it has one or
    was not timed (the CPU)."""
    found = [f.get("message", "") for f in result.get("findings") or [] if f.get("check") == "timing_untrusted"]
    return found[0][:300] if found else ""


def _distribution_row(name: str, q: dict[str, float] | None) -> str:
    if q is None:
        return f"| {name} | 0 | - | - | - | - | - |"
    cells = " | ".join(f"{q[k]:.3f}" for k in ("min", "p5", "median", "p95", "max"))
    return f"| {name} | {q['count']} | {cells} |"


def report(summary: dict[str, Any], title: str, baseline: str) -> str:
    lines = [f"# {title}", ""]
    g = summary["generation"]
    lines += [
        f"Generation: {g['done']} of {g['problems']} problems done: {g['written']} solutions written, "
        f"{len(g['skipped'])} skipped, {g['wall_s']} s "
        f"({g['per_problem_s']} s per problem).",
        "",
    ]
    lines += [f"- skipped {s['problem']}: {s['reason']}" for s in g["skipped"]]
    lines += ["", f"Candidates evaluated: {summary['candidates']}", "", "| verdict | count |", "|---|---|"]
    lines += [f"| {v} | {n} |" for v, n in summary["verdicts"].items()]
    lines += ["", "| distribution (ok) | n | min | p5 | median | p95 | max |", "|---|---|---|---|---|---|---|"]
    lines += [
        _distribution_row(f"speedup vs {baseline}", summary["speedup"]),
        _distribution_row("coverage", summary["coverage"]),
    ]
    cost = summary["cost"]
    lines += ["", f"Cost: {cost['bench_wall_s']} s for the bench run, {cost['per_candidate_s']} s per candidate.", ""]
    lines += ["| stage | mean s |", "|---|---|"] + [f"| {k} | {v} |" for k, v in cost["stage_mean_s"].items()]
    if summary["not_ok"]:
        lines += ["", "Not ok:", ""] + [f"- {x['problem']}: {x['verdict']}: {x['feedback']}" for x in summary["not_ok"]]
    if summary.get("ok_without_speedup"):
        lines += ["", "Ok without a speedup (timing not trusted: the reward loses its speed term):", ""]
        lines += [f"- {x['problem']}: {x['why']}" for x in summary["ok_without_speedup"]]
    return "\n".join(lines) + "\n"


def _complete(generation: dict[str, Any]) -> bool:
    return len(generation.get("problems", [])) >= generation.get("problems_total", 0)


LAZY_SUFFIX = """

import triton
import triton.language as tl


@triton.jit
def lazy_touch_kernel(ptr):
    tl.store(ptr, tl.load(ptr) + 1.0)


class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        devices = [a.device for a in args if isinstance(a, torch.Tensor)]
        touch = torch.zeros(1, device=devices[0] if devices else "cuda")
        lazy_touch_kernel[(1,)](touch)
        return out
"""
"""What the lazy candidate adds to the problem's source (which imports torch and defines Model)."""


def lazy_solutions(problems: list, out: Path) -> None:
    """The lazy candidates and a generation summary in the layout ``solutions inductor`` writes."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for problem in problems:
        (out / f"{problem.name}.py").write_text(problem.source.rstrip() + "\n" + LAZY_SUFFIX)
        rows.append({"problem": problem.name, "status": "written", "reason": ""})
    summary = {"problems_total": len(problems), "problems": rows, "written": len(rows)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def generate_step(args: argparse.Namespace) -> None:
    """Step 1, in a process of its own: the solutions (library calls, no CLI: typer is not needed)."""
    from tritongym.bench.run import pick_problems
    from tritongym.progress import ProgressReport
    from tritongym.solutions.inductor import generate, prepare_all

    if args.candidate == "lazy":
        lazy_solutions(pick_problems(args.problems, ids=args.ids), args.out / "solutions")
        return
    prepared, refused = prepare_all(pick_problems(args.problems, ids=args.ids), small=args.device == "cpu")
    per_problem = max(30.0, args.generate_timeout - 30.0)  # a compilation that hangs must not hold the step
    with ProgressReport(len(prepared), "compiling", Console(stderr=True)) as progress:
        outcomes = generate(prepared, args.out / "solutions", args.device, jobs=args.jobs, timeout_s=per_problem,
                            refused=refused, resume=True, on_done=lambda _: progress.advance())  # fmt: skip
    for o in outcomes:
        print(f"{o.problem}: {o.status}" + (f": {o.reason}" if o.reason else ""), flush=True)


def baseline(candidate: str) -> str:
    """What a candidate is timed against: Inductor's code against torch.compile (the same code), the
    lazy candidate against eager PyTorch (its own forward)."""
    return "compile" if candidate == "inductor" else "eager"


def bench_step(args: argparse.Namespace) -> None:
    """Step 2, in a process of its own: the bench run replaying the solutions against torch.compile."""
    from tritongym.bench.run import BenchConfig, run_bench
    from tritongym.evaluate import EvalConfig

    config = BenchConfig(
        policy="scripted", model=args.candidate, script="replay", problems=args.problems, ids=args.ids,
        solutions=str(args.out / "solutions"), small=args.device == "cpu",
        eval=EvalConfig(device=args.device, baseline=baseline(args.candidate), timing_budget_s=args.timing_budget,
                        max_source_bytes=MAX_SOURCE_BYTES),
    )  # fmt: skip
    outcome = run_bench(config, args.out / "run", jobs=args.sandboxes)
    print(f"{len(outcome.records)} candidates judged, {outcome.unscored} unscored", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--problems", required=True, help="A KernelBench level directory, e.g. build/KernelBench/level1."
    )
    parser.add_argument("--ids", default="", help="Leading numbers to keep, e.g. 1-34.")
    parser.add_argument(
        "--candidate", choices=("inductor", "lazy"), default="inductor",
        help="inductor: torch.compile's generated Triton (timed against torch.compile); lazy: the problem's "
        "own PyTorch plus one trivial Triton launch (timed against eager).",
    )  # fmt: skip
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--jobs", type=int, default=16, help="Problems compiled at once.")
    parser.add_argument("--sandboxes", type=int, default=None, help="Sandboxes of the bench run (default: the pool's).")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--generate-timeout", type=float, default=240.0, help="Seconds for the generation step.")
    parser.add_argument("--bench-timeout", type=float, default=300.0, help="Seconds for the bench step.")
    parser.add_argument("--timing-budget", type=float, default=2.0, help="Seconds of timing per candidate.")
    parser.add_argument("--step", choices=("generate", "bench"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
        logging.getLogger("tritongym").setLevel(logging.INFO)
        (generate_step if args.step == "generate" else bench_step)(args)
        return
    if not Path(args.problems).is_dir():
        sys.exit(f"{args.problems}: no such directory (extract KernelBench first, see this script's docstring)")
    args.out.mkdir(parents=True, exist_ok=True)
    solutions, run = args.out / "solutions", args.out / "run"
    timings_file = args.out / "timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else {"generate_s": 0.0, "bench_s": 0.0}
    step = [sys.executable, *sys.argv]
    summary_file = solutions / "summary.json"
    complete = summary_file.exists() and _complete(json.loads(summary_file.read_text()))
    if not complete:  # resumes: problems with an outcome are not compiled again
        _, seconds = _run([*step, "--step", "generate"], args.generate_timeout)
        timings["generate_s"] += seconds
    if (solutions / "summary.json").exists():
        _, seconds = _run([*step, "--step", "bench"], args.bench_timeout)
        timings["bench_s"] += seconds  # a resumed run adds its own time
    timings_file.write_text(json.dumps(timings) + "\n")
    summary = summarize(solutions, run, timings["generate_s"], timings["bench_s"])
    summary["settings"] = {k: str(v) for k, v in vars(args).items() if k != "step"}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    name = "Inductor solutions" if args.candidate == "inductor" else "Lazy candidates"
    text = report(summary, f"{name} of {args.problems} {args.ids}".strip(), baseline(args.candidate))
    (args.out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
