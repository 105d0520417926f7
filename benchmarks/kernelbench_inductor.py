"""At-scale check on KernelBench: Inductor's own code (or the problem's own PyTorch) as the candidate.

For one KernelBench level (optionally a range of ids), two steps run at once, each in a process of
its own:

1. the generation (``tritongym solutions inductor``'s library calls): torch.compile's generated
   Triton code of every problem, made standalone (problems it cannot make are skipped, with their
   reason), written to OUT/solutions as each one is done, with its measured sizes;
2. the bench step: chunk after chunk of the solutions already written (``tritongym bench --policy
   scripted --script replay --solutions OUT/solutions --baseline compile``'s library call, one run
   directory per chunk, OUT/chunks/NAME), each evaluated at the problem's own size with timing and
   profiling on, in a pool with as many judges per GPU as the chunk's problems allow
   (:func:`judges_per_gpu`; the pool is kept while its class has problems ready).

With ``--deadline`` no chunk starts that would not end in time (cut to what fits, from the measured
cost per candidate) and whatever runs at the deadline is stopped; OUT/chunks.json records the chunks,
and the same command resumes: the generation where it stopped, an unfinished chunk first, then the
problems not reached.

The candidate *is* what the baseline runs, so this is an A/A test of the judge at scale: every
correct solution should be ``ok``, its speedup near 1.00 (the spread is the timing noise a reward
sees), and its coverage the share of the forward's GPU time in Inductor's Triton kernels (library
calls, cuBLAS and cuDNN, are not the candidate's own). OUT/summary.json and OUT/report.md hold the
generation's outcome, the verdict counts (every verdict other than ok listed with its feedback), the
coverage and speedup distributions and the cost per candidate (wall time over candidates, and the
mean of each evaluation stage), each chunk's in its directory, the level's over every chunk in OUT.

    python benchmarks/kernelbench_inductor.py --problems build/KernelBench/level1 --out OUT/l1 --deadline 540

With ``--candidate lazy`` the candidate is instead the problem's own PyTorch code plus one trivial
Triton launch (``ModelNew`` subclasses ``Model``, calls its forward, then launches a one-element
kernel), timed against eager PyTorch: correct and honest by construction, so every problem should be
``ok`` with a small coverage and a speedup just under 1.00, at the problem's own size, through the
pool. Any other verdict (an out-of-memory of the judge's, a library stream taken for a side
stream, a timeout) is the judge's problem: this is issue 12's memory and stream check.

The problems come from a KernelBench checkout (``git --git-dir=<KernelBench.git> archive HEAD
KernelBench | tar -x -C build/`` gives build/KernelBench/level1..4). ``bash benchmarks/gpu_run.sh
kernelbench 1,3`` runs levels 1 and 3 on a GPU under one deadline.
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


def _start(command: list[str]) -> subprocess.Popen:
    """A step in a session of its own, so that past its time the whole session (its compiling
    children included) can be killed, and what it wrote so far summarised."""
    print("$", " ".join(command), flush=True)
    return subprocess.Popen(command, start_new_session=True)


def _finish(process: subprocess.Popen, timeout_s: float) -> int:
    try:
        return process.wait(timeout=max(0.0, timeout_s))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        print(f"step stopped: out of time; summarising what it wrote ({process.args[-1]})", flush=True)
        return 124


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


def read_trajectories(runs: list[Path]) -> list[dict[str, Any]]:
    """The latest record of every turn in the runs' trajectories (a line a stopped step cut short is
    skipped)."""
    latest: dict[tuple, dict[str, Any]] = {}
    for run in runs:
        path = run / "trajectories.jsonl"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                row = None
            if row:
                latest[(row["problem"], row["sample"], row["turn"])] = row
    return list(latest.values())


def summarize(solutions: Path, runs: Path | list[Path], generate_s: float, bench_s: float) -> dict[str, Any]:
    """The check's summary from the generation's summary.json and the bench runs' trajectories (one
    run directory, or every chunk's)."""
    generation = json.loads((solutions / "summary.json").read_text()) if (solutions / "summary.json").exists() else {}
    records = read_trajectories([runs] if isinstance(runs, Path) else runs)
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
    if summary.get("chunks"):
        lines += [
            "",
            "| chunk | judges per GPU | candidates | wall s | s per candidate | verdicts |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {c['name']} | {c['judges']} | {c.get('candidates', '-')} | {c.get('wall_s', '-')} | "
            f"{c.get('per_candidate_s', '-')} | {c.get('verdicts', '-')} |"
            for c in summary["chunks"]
        ]
    if summary.get("not_reached"):
        lines += ["", f"Not reached (out of time; the same command resumes): {', '.join(summary['not_reached'])}"]
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


def _input_bytes(problem: Any) -> int:
    """A problem's input bytes, read statically (elements as float32; 0 where the reader cannot)."""
    from tritongym.problems.sizes import input_elements

    try:
        return 4 * input_elements(problem.source)[0]
    except Exception:  # a source the static reader cannot follow
        return 0


def judges_per_gpu(input_bytes: int, total: int, most: int, output_bytes: int | None = None, params: int = 0) -> int:
    """Judges (sandboxes) per GPU of ``total`` bytes for a problem of ``input_bytes`` input bytes,
    ``output_bytes`` of output (unknown: taken as large as the inputs) and ``params`` bytes of model
    state: the largest of ``most``, ``most // 2``, ... 1 whose share of the GPU holds the job (judge
    and runner, ``memory.job_bytes``) and whose answer limit keeps its trials' answers on the GPU
    (``memory.answer_limit``). More judges than that would send a 4 GiB problem's answers through
    host copies (10 s a trial), and put judges beside a job the GPU cannot hold twice: the judge
    knows a job's size only after its first trial, and the others' float64 references go to the
    host (a convolution's: minutes) when the device is full."""
    from tritongym.evaluate.judge.memory import Footprint, answer_limit, job_bytes

    outputs = input_bytes if output_bytes is None else output_bytes
    footprint = Footprint(inputs=input_bytes, outputs=outputs, params=params, float64=True)
    judges = max(1, most)
    while judges > 1:
        limit = answer_limit(total, judges)
        if input_bytes + outputs <= limit and job_bytes(footprint, limit) <= total // judges:
            break
        judges //= 2
    return judges


def plan_order(problems: list, total: int | None, most: int) -> list[tuple[str, int]]:
    """(problem name, judges per GPU) in the order they are compiled and judged: the problems that
    share the GPU most first (many cheap ones judged while the rest compile), then by number. On the
    CPU (``total`` None) every problem gets ``most``."""
    from tritongym.bench.run import _number

    planned = [(p.name, judges_per_gpu(_input_bytes(p), total, most) if total else most) for p in problems]
    return sorted(planned, key=lambda named: (-named[1], _number(named[0]) or 0, named[0]))


def next_chunk(
    order: list[tuple[str, int]],
    outcomes: dict[str, str],
    taken: set[str],
    size: int,
    final: bool,
    patient: bool,
    current: int = 0,
) -> tuple[str, list[str], int]:
    """What the bench step does next: ``("run", names, judges)`` (up to ``size`` problems with a
    solution, all of one judges-per-GPU class: the ``current`` pool's while it has one ready, else the
    first class in ``order`` with a problem left), ``("wait", [], 0)`` (that class has fewer than
    ``size`` ready and more still compiling, and ``patient``) or ``("done", [], 0)``. ``outcomes``:
    the generation's status per problem so far (``written`` or ``skipped``); ``taken``: problems in a
    chunk already; ``final``: the generation is over (a problem without an outcome then never gets
    one)."""
    left = [(n, j) for n, j in order if n not in taken and outcomes.get(n) != "skipped"]
    if final:
        left = [(n, j) for n, j in left if n in outcomes]
    if not left:
        return "done", [], 0
    judges = left[0][1]
    if any(j == current and outcomes.get(n) == "written" for n, j in left):
        judges = current  # a pool of another size costs a restart (its judges' start, Inductor's warm-up)
    ready = [n for n, j in left if j == judges and outcomes.get(n) == "written"]
    compiling = any(j == judges and n not in outcomes for n, j in left)
    if len(ready) >= size or (ready and (not compiling or not patient)):
        return "run", ready[:size], judges
    return "wait", [], 0


def chunk_name(names: list[str]) -> str:
    """A chunk's directory name: its problems' numbers as ranges (``19-27,30``)."""
    from tritongym.bench.run import _number

    numbers = sorted(_number(n) or 0 for n in names)
    parts: list[str] = []
    for number in numbers:
        if parts and int(parts[-1].split("-")[-1]) == number - 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{number}"
        else:
            parts.append(str(number))
    return ",".join(parts)


def generate_step(args: argparse.Namespace) -> None:
    """Step 1, in a process of its own: the solutions (library calls, no CLI: typer is not needed),
    in the bench step's order, beside it on the GPU."""
    from tritongym.bench.run import pick_problems
    from tritongym.progress import ProgressReport
    from tritongym.solutions.inductor import generate, prepare_all

    problems = pick_problems(args.problems, ids=args.ids)
    if args.candidate == "lazy":
        lazy_solutions(problems, args.out / "solutions")
        return
    rank = {name: i for i, (name, _) in enumerate(plan_order(problems, _gpu_bytes(args.device), args.sandboxes))}
    problems.sort(key=lambda p: rank[p.name])
    prepared, refused = prepare_all(problems, small=args.device == "cpu")
    with ProgressReport(len(prepared), "compiling", Console(stderr=True)) as progress:
        outcomes = generate(prepared, args.out / "solutions", args.device, jobs=args.jobs,
                            timeout_s=args.problem_timeout, refused=refused, resume=True,
                            memory_share=GENERATION_MEMORY_SHARE, on_done=lambda _: progress.advance())  # fmt: skip
    for o in outcomes:
        print(f"{o.problem}: {o.status}" + (f": {o.reason}" if o.reason else ""), flush=True)


GENERATION_MEMORY_SHARE = 0.2
"""Share of the GPU's free memory the compilations may hold at once: the bench step's judge runs
beside them, with a problem of up to 16 GiB of inputs."""


def _gpu_bytes(device: str) -> int | None:
    """The GPU's memory (what a judge's share is taken of; read without making a CUDA context, which
    would hold memory for this process's life); None on the CPU."""
    if not device.startswith("cuda"):
        return None
    import torch

    return torch.cuda.get_device_properties(0).total_memory


def baseline(candidate: str) -> str:
    """What a candidate is timed against: Inductor's code against torch.compile (the same code), the
    lazy candidate against eager PyTorch (its own forward)."""
    return "compile" if candidate == "inductor" else "eager"


CHUNKS = "chunks.json"
GENERATION_DONE = "generation.done"
MARGIN_S = 15.0
"""Seconds kept free at the deadline (the summaries, the pool's shutdown)."""
WAIT_S = 20.0
"""Longest the bench step waits for more of a class's problems to compile before judging those ready."""


def _generation(out: Path) -> tuple[dict[str, dict[str, Any]], bool]:
    """The generation's outcomes so far (problem -> its row: status, sizes), and whether it is over."""
    over = (out / GENERATION_DONE).exists()
    try:
        rows = json.loads((out / "solutions" / "summary.json").read_text())["problems"]
    except (OSError, ValueError, KeyError):  # not written yet, or caught while being rewritten
        return {}, over
    return {r["problem"]: r for r in rows}, over


def sized_order(order: list[tuple[str, int]], rows: dict[str, dict[str, Any]], total: int | None, most: int):
    """``order`` with each compiled problem's judges per GPU from its measured sizes (its inputs, its
    outputs and its model's state as the generation found them) instead of the static estimate."""
    if not total:
        return order
    sized = []
    for name, judges in order:
        row = rows.get(name) or {}
        if row.get("output_bytes"):
            judges = judges_per_gpu(row["input_bytes"], total, most, row["output_bytes"], row.get("param_bytes", 0))
        sized.append((name, judges))
    return sized


def _load_chunks(out: Path) -> dict[str, Any]:
    path = out / CHUNKS
    return json.loads(path.read_text()) if path.exists() else {"chunks": []}


def _save_chunks(out: Path, state: dict[str, Any]) -> None:
    (out / CHUNKS).write_text(json.dumps(state, indent=2) + "\n")


def bench_step(args: argparse.Namespace) -> None:
    """Step 2, in a process of its own: chunk after chunk of solutions, as the generation writes them,
    judged against the baseline through one pool per judges-per-GPU class, until the deadline (a chunk
    that would not fit is cut to what does, from the measured cost per candidate). Each chunk's
    summary is written when it ends; a chunk a stop cut short is resumed first by the next command."""
    from tritongym.bench.run import BenchConfig, LazyLocalEnv, pick_problems, run_bench
    from tritongym.env import PoolConfig
    from tritongym.evaluate import EvalConfig

    deadline = args.deadline_at or float("inf")
    problems = pick_problems(args.problems, ids=args.ids)
    total = _gpu_bytes(args.device)
    order = plan_order(problems, total, args.sandboxes)
    state = _load_chunks(args.out)
    if args.rejudge:
        again = rejudge(state, args.out, set(args.rejudge.split(",")))
        _save_chunks(args.out, state)
        print(f"judged again: {', '.join(again) or 'none'}", flush=True)
    cost: dict[int, float] = {}
    env, env_judges, waited = None, 0, 0.0
    try:
        while True:
            unfinished = [c for c in state["chunks"] if not c.get("done")]
            if unfinished:
                chunk = unfinished[0]
            else:
                rows, over = _generation(args.out)
                outcomes = {n: r["status"] for n, r in rows.items()}
                taken = {n for c in state["chunks"] for n in c["problems"]}
                sized = sized_order(order, rows, total, args.sandboxes)
                action, names, judges = next_chunk(
                    sized, outcomes, taken, args.chunk, over, waited < WAIT_S, env_judges if env else 0
                )
                if action == "done":
                    break
                if action == "wait":
                    time.sleep(1.0)
                    waited += 1.0
                    continue
                per_candidate = cost.get(judges, args.cost_guess / judges)
                fit = int((deadline - time.time() - MARGIN_S) / per_candidate)
                if fit < 1:
                    print(f"out of time: no chunk started ({per_candidate:.1f} s per candidate)", flush=True)
                    break
                names = names[:fit]
                name, taken_names = chunk_name(names), {c["name"] for c in state["chunks"]}
                if name in taken_names:  # judged again (--rejudge): a directory of its own
                    name = next(
                        f"{name}_{k}" for k in range(2, len(taken_names) + 3) if f"{name}_{k}" not in taken_names
                    )
                chunk = {"name": name, "problems": names, "judges": judges, "done": False}
                state["chunks"].append(chunk)
                _save_chunks(args.out, state)
            waited = 0.0
            started = time.monotonic()
            if env is None or env_judges != chunk["judges"]:
                if env is not None:
                    env.close()
                sandboxes = chunk["judges"] if args.device.startswith("cuda") else args.sandboxes
                env, env_judges = (
                    LazyLocalEnv(PoolConfig(devices=args.device, sandboxes_per_device=sandboxes)),  # started if needed
                    chunk["judges"],
                )
            config = BenchConfig(
                policy="scripted", model=args.candidate, script="replay", problems=args.problems,
                ids=chunk_name(chunk["problems"]), solutions=str(args.out / "solutions"), small=args.device == "cpu",
                eval=EvalConfig(device=args.device, baseline=baseline(args.candidate),
                                timing_budget_s=args.timing_budget, max_source_bytes=MAX_SOURCE_BYTES),
            )  # fmt: skip
            rebase(args.out / "chunks" / chunk["name"], config.solutions)
            outcome = run_bench(config, args.out / "chunks" / chunk["name"], env=env)
            wall = time.monotonic() - started
            chunk |= {"done": True, "wall_s": round(chunk.get("wall_s", 0.0) + wall, 1)}
            write_chunk_summary(args, chunk, len(outcome.records))
            _save_chunks(args.out, state)
            if outcome.records:
                cost[chunk["judges"]] = chunk["wall_s"] / len(outcome.records)
            print(f"chunk {chunk['name']}: {len(outcome.records)} candidates judged in {wall:.0f} s", flush=True)
    finally:
        if env is not None:
            env.close()


def rejudge(state: dict[str, Any], out: Path, verdicts: set[str]) -> list[str]:
    """Take the problems whose latest verdict is one of ``verdicts`` out of their finished chunks, so
    that they are judged again in a chunk of their own (after a fix of the judge's: a timeout or an
    out-of-memory of its making); their earlier records stay in their chunk's directory, the later
    chunk's count. Returns them."""
    latest = {
        r["problem"]: r["verdict"] for r in read_trajectories([out / "chunks" / c["name"] for c in state["chunks"]])
    }
    again = []
    for chunk in state["chunks"]:
        if chunk.get("done"):
            chosen = [n for n in chunk["problems"] if latest.get(n) in verdicts]
            chunk["problems"] = [n for n in chunk["problems"] if n not in chosen]
            again += chosen
    return again


def rebase(run: Path, solutions: str) -> None:
    """A chunk's run directory moved with its check's --out (an earlier call's archive extracted
    elsewhere): its recorded solutions directory, always the check's own, is the one it is now in, so
    that the bench run resumes instead of refusing other settings."""
    path = run / "run.json"
    if path.exists():
        settings = json.loads(path.read_text())
        if settings.get("solutions") != solutions:
            path.write_text(json.dumps(settings | {"solutions": solutions}, indent=2) + "\n")


def write_chunk_summary(args: argparse.Namespace, chunk: dict[str, Any], candidates: int) -> None:
    """A finished chunk's summary.json and report.md in its directory; its row in chunks.json."""
    directory = args.out / "chunks" / chunk["name"]
    summary = summarize(args.out / "solutions", directory, 0.0, chunk["wall_s"])
    chunk |= {"candidates": candidates, "per_candidate_s": summary["cost"]["per_candidate_s"],
              "verdicts": summary["verdicts"]}  # fmt: skip
    (directory / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    title = f"{_name(args.candidate)} of {args.problems}, chunk {chunk['name']} ({chunk['judges']} judges per GPU)"
    (directory / "report.md").write_text(report(summary, title, baseline(args.candidate)))


def _name(candidate: str) -> str:
    return "Inductor solutions" if candidate == "inductor" else "Lazy candidates"


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
    parser.add_argument(
        "--sandboxes", type=int, default=4,
        help="On a GPU, the most judges per GPU (each chunk gets as many as its largest problem's memory "
        "allows: judges_per_gpu); on the CPU, the sandboxes.",
    )  # fmt: skip
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--chunk", type=int, default=12, help="Most problems per chunk (one summary each).")
    parser.add_argument(
        "--deadline", type=float, default=None,
        help="Seconds for the whole command: no chunk is started that would not end by then (from the "
        "measured cost per candidate), and whatever runs then is stopped; the same command resumes.",
    )  # fmt: skip
    parser.add_argument(
        "--cost-guess", type=float, default=24.0,
        help="Seconds per candidate with one judge per GPU (divided by the judges), until measured.",
    )  # fmt: skip
    parser.add_argument("--problem-timeout", type=float, default=150.0, help="Seconds to compile one problem.")
    parser.add_argument("--generate-timeout", type=float, default=240.0, help="Seconds for the generation step.")
    parser.add_argument(
        "--bench-timeout", type=float, default=300.0,
        help="Seconds for the bench step beyond the generation's (without --deadline).",
    )  # fmt: skip
    parser.add_argument("--timing-budget", type=float, default=2.0, help="Seconds of timing per candidate.")
    parser.add_argument(
        "--rejudge", default="",
        help="Verdicts (e.g. timeout,infrastructure_error) whose problems in finished chunks are judged again.",
    )  # fmt: skip
    parser.add_argument("--step", choices=("generate", "bench"), help=argparse.SUPPRESS)
    parser.add_argument("--deadline-at", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
        logging.getLogger("tritongym").setLevel(logging.INFO)
        (generate_step if args.step == "generate" else bench_step)(args)
        return
    if not Path(args.problems).is_dir():
        sys.exit(f"{args.problems}: no such directory (extract KernelBench first, see this script's docstring)")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    limit = args.deadline if args.deadline is not None else args.generate_timeout + args.bench_timeout
    deadline_at = time.time() + limit
    timings_file = args.out / "timings.json"
    timings = {"generate_s": 0.0, "bench_s": 0.0, "commands": 0}
    if timings_file.exists():
        timings |= json.loads(timings_file.read_text())
    step = [sys.executable, *sys.argv]
    summary_file = args.out / "solutions" / "summary.json"
    complete = summary_file.exists() and _complete(json.loads(summary_file.read_text()))
    (args.out / GENERATION_DONE).unlink(missing_ok=True)
    generation = None if complete else _start([*step, "--step", "generate"])  # resumes where it stopped
    if complete:
        (args.out / GENERATION_DONE).touch()
    bench = _start([*step, "--step", "bench", "--deadline-at", str(deadline_at)])  # judges what is written
    if generation is not None:
        _finish(generation, limit if args.deadline is not None else args.generate_timeout)
        timings["generate_s"] += time.monotonic() - started
        (args.out / GENERATION_DONE).touch()
    _finish(bench, deadline_at - time.time())
    timings["bench_s"] += time.monotonic() - started  # a resumed run adds its own time
    timings["commands"] += 1
    timings_file.write_text(json.dumps(timings) + "\n")
    text = write_summary(args, timings)
    print(text)


def write_summary(args: argparse.Namespace, timings: dict[str, Any]) -> str:
    """The level's summary over every chunk (summary.json, report.md in --out); returns the report."""
    state = _load_chunks(args.out)
    runs = [args.out / "chunks" / c["name"] for c in state["chunks"]]
    summary = summarize(args.out / "solutions", runs, timings["generate_s"], timings["bench_s"])
    rows, _ = _generation(args.out)
    judged = {r["problem"] for r in read_trajectories(runs)}
    from tritongym.bench.run import _number

    summary["not_reached"] = sorted((n for n, r in rows.items() if r["status"] == "written" and n not in judged),
                                    key=lambda n: (_number(n) or 0, n))  # fmt: skip
    summary["chunks"] = state["chunks"]
    judged_wall = sum(c.get("wall_s", 0.0) for c in state["chunks"])
    summary["cost"]["chunks_wall_s"] = round(judged_wall, 1)
    summary["cost"]["chunks_per_candidate_s"] = (
        round(judged_wall / summary["candidates"], 3) if summary["candidates"] else None
    )
    summary["settings"] = {k: str(v) for k, v in vars(args).items() if k not in ("step", "deadline_at")}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    text = report(summary, f"{_name(args.candidate)} of {args.problems} {args.ids}".strip(), baseline(args.candidate))
    (args.out / "report.md").write_text(text)
    return text


if __name__ == "__main__":
    main()
