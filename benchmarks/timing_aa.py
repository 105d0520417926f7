"""A/A timing: the reference's own code as the candidate, so the right speedup is known.

For every bundled problem the candidate subclasses the reference and adds one launch of a one-element
Triton kernel per forward (the judge refuses a candidate without Triton). Its speedup should be the
reference's time over the candidate's, both measured here in one process and one CUDA context (no
judge, no runner: ``in_process``, a subprocess of its own, before any judge starts), as the judge
times them (batches of fresh input sets, each after an L2 flush, queued behind a hold, medians).
``speedup x candidate / reference`` is the A/A ratio, 1.00 for an unbiased judge. The token launch
costs more than its kernel's profiled duration (``token_us``): the gap between two dependent
launches, about 1.6 us a call on an H200, is in ``extra_us`` (the candidate's time less the
reference's). Each problem is evaluated ``--repeats`` times, which also shows how far apart repeated
speedups are.

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


def load_module(problem):
    """The A/A candidate's module, imported from a file (Triton reads a kernel's source there)."""
    import importlib.util
    import tempfile

    path = Path(tempfile.mkdtemp()) / f"aa_{problem.name}.py"
    path.write_text(aa_source(problem))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SLOT_BYTES = 2 << 30
"""As speed.SLOT_BYTES: the judge's batch holds at most this much of one side's input sets and outputs."""


def in_process(problem, reps: int = 11, target_s: float = 0.01) -> dict:
    """Per-call microseconds of the reference and of the A/A candidate in this process: batches of
    fresh input sets (as many as the judge's batch would hold), each bracket after a hold and an L2
    flush, the two alternating; medians of ``reps``, each less the flush alone."""
    module = load_module(problem)
    with torch.device("cuda"):
        init = module.get_init_inputs()
        reference = getattr(module, problem.entry_point)(*init).eval()
        candidate = getattr(module, f"{problem.entry_point}New")(*init).eval()
        candidate.load_state_dict(reference.state_dict())
        sample = [t.cuda() if isinstance(t, torch.Tensor) else t for t in module.get_inputs()]
    with torch.no_grad():
        out = reference(*sample)
    size = sum(t.nbytes for t in [*sample, out] if isinstance(t, torch.Tensor))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        start.record()
        reference(*sample)
        end.record()
        end.synchronize()
    count = int(max(1, min(512, SLOT_BYTES // max(size, 1), target_s / max(start.elapsed_time(end) / 1e3, 1e-7))))
    with torch.device("cuda"):
        sets = [[t.cuda() if isinstance(t, torch.Tensor) else t for t in module.get_inputs()] for _ in range(count)]
    scratch = torch.empty(4 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.int8, device="cuda")
    hold = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    hold[0].record()
    torch.cuda._sleep(1_000_000)
    hold[1].record()
    hold[1].synchronize()
    cycles = int(1_000_000 / hold[0].elapsed_time(hold[1]) * 4)  # about 4 ms

    def bracket(model) -> float:
        torch.cuda._sleep(cycles)
        start.record()
        scratch.zero_()
        for args in sets if model is not None else ():
            model(*args)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    times: dict = {"flush": [], "reference": [], "candidate": []}
    with torch.no_grad():
        for model in (reference, candidate):
            bracket(model)
        for _ in range(reps):
            for name, model in (("flush", None), ("reference", reference), ("candidate", candidate)):
                times[name].append(bracket(model))
    flush = statistics.median(times["flush"])
    per = {k: (statistics.median(times[k]) - flush) / count for k in ("reference", "candidate")}
    return {"count": count, "reference_us": per["reference"], "candidate_us": per["candidate"]}


def _in_process_all(names: list[str], queue) -> None:
    problems = [p for p in load_bundled() if p.name in names]
    queue.put({p.name: in_process(p) for p in problems})


def in_process_costs(problems) -> dict:
    """``in_process`` of every problem in a subprocess of its own, whose CUDA context is gone before
    any judge starts."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_in_process_all, args=([p.name for p in problems], queue))
    process.start()
    costs = queue.get()
    process.join()
    return costs


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
    costs = in_process_costs(problems)
    tasks = [Task(p, aa_source(p), f"{p.name} #{i}") for p in problems for i in range(args.repeats)]
    rows: dict[str, list] = {p.name: [] for p in problems}
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        for task, result in env.evaluate_many(tasks, config):
            token = [k.time_us for k in result.kernels if k.own]
            timing = result.timing
            entry = {"verdict": str(result.verdict), "speedup": result.speedup}
            if timing is not None and result.speedup:
                token_us = token[0] if token else 0.0
                alone = costs[task.problem.name]
                entry |= {
                    "speedup_ci": timing.speedup_ci,
                    "reference_us": round(timing.reference_ms * 1e3, 2),
                    "candidate_us": round(timing.candidate_ms * 1e3, 2),
                    "token_us": round(token_us, 2),
                    "in_process_reference_us": round(alone["reference_us"], 2),
                    "extra_us": round(alone["candidate_us"] - alone["reference_us"], 2),
                    "aa_ratio": round(result.speedup * alone["candidate_us"] / alone["reference_us"], 4),
                    "hand_off_us": timing.hand_off_us,
                    "runner_hand_off_us": timing.runner_hand_off_us,
                    "clean_hand_off_us": timing.clean_hand_off_us,
                    "subtracted_us": timing.subtracted_us,
                    "reps": timing.reps,
                    "stopped": timing.stopped,
                    "timing_s": result.stage_seconds.get("timing"),
                }
            else:
                entry["feedback"] = result.feedback[:300]
            rows[task.problem.name].append(entry)
    print(f"{'problem':32s} {'ref us':>9s} {'extra us':>8s} {'A/A ratios':>28s} {'spread':>7s}")
    summary = {}
    for name, entries in rows.items():
        ratios = [e["aa_ratio"] for e in entries if "aa_ratio" in e]
        spread = max(ratios) / min(ratios) - 1 if ratios else None
        summary[name] = {"aa_ratios": ratios, "median": statistics.median(ratios) if ratios else None,
                         "spread": spread}  # fmt: skip
        first = next((e for e in entries if "aa_ratio" in e), entries[0])
        print(
            f"{name:32s} {first.get('reference_us', 0):9.1f} {first.get('extra_us', 0):8.2f} "
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
        "in_process": costs,
        "median_aa_ratio": statistics.median(all_ratios) if all_ratios else None,
        "problems": summary,
        "evaluations": rows,
    }
    print(f"median A/A ratio over all: {report['median_aa_ratio']}")
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
