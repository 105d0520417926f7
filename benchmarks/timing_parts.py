"""Diagnostic of the judge's timing: one A/A job taken apart (benchmarks/timing_aa.py's candidate).

Part A, in this process (one CUDA context, no runner): per call of a batch of ``N`` fresh input sets
after an L2 flush, the reference alone, the A/A candidate (the reference plus its token launch), the
candidate with each output copied into a contiguous slot as the runner does, and the twin's stand-in
for those copies (the judge copying one kept output into every slot). ``token_us`` (candidate less
reference) is what the A/A candidate really costs more per call, gaps between launches included.

Part B, in a real judge (LocalEnv): every repetition's four brackets (timing.Rep), plus an extra
bracket per repetition in which the *runner* closes an empty batch (``Batch(0)``: its stream waits
on ``go`` and records ``done``), to compare the runner's hand-off with the twin's. A ``sitecustomize``
written to a temporary folder patches speed.py inside the judge (its PYTHONPATH is set through
sandbox.sandbox_env); each variant in ``--variants`` is one pass over the problems:

* ``default``: the judge as it is;
* ``big``: batches about four times longer (``TARGET_BATCH_S`` x4 and ``SLOT_BYTES`` x8): a bias
  per batch shrinks per call by the same factor, one per call does not.

    python benchmarks/timing_parts.py --out /tmp/timing_parts.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
from pathlib import Path

import torch
import triton

PROBLEMS = ("01_vector_add", "03_row_sum", "13_row_argmax", "10_transposed_broadcast_add", "06_linear_relu")
VARIANTS = {"default": {}, "big": {"TARGET_BATCH_S": 4.0, "SLOT_BYTES": 8.0}}

SITECUSTOMIZE = r"""
import importlib.abc, importlib.machinery, json, os, sys, time

LOG = os.environ.get("TG_DIAG_LOG")
SCALE = json.loads(os.environ.get("TG_DIAG_SCALE", "{}"))


def _patch(speed):
    import torch
    from tritongym.evaluate.judge import protocol as p
    for name, factor in SCALE.items():
        value = getattr(speed, name) * factor
        setattr(speed, name, type(getattr(speed, name))(value))
    original_rep, original_time = speed.repetition, speed.time_candidate

    def write(record):
        with open(LOG, "a") as fh:
            fh.write(json.dumps(record) + "\n")

    def runner_empty(bench):
        sets = bench.fresh_inputs()
        opened = bench._open("remote", sets)
        for kept, slot in zip(bench.kept, bench.shared_out):
            for k in range(bench.count):
                slot[k].copy_(kept[-1])
        handed, back = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        handed.record()
        bench.go.record()
        bench.state.ask(p.Batch(0), (p.BatchQueued,))
        bench.holds.release(opened.hold)
        bench._poll(bench.done)
        back.record()
        bench._copy_out()
        return bench._close(opened).seconds, handed.elapsed_time(back) / 1e3

    def repetition(bench, model, rep, candidate_first, clean):
        result = original_rep(bench, model, rep, candidate_first, clean)
        record = {"rep": rep, "count": bench.count, "candidate_first": candidate_first, "late": bench.late}
        if result is not None:
            record |= {k: getattr(result, k) for k in ("reference", "candidate", "empty", "remote_empty",
                                                         "hand_off", "contended")}
            record["judge_runner_hand_off"] = getattr(result, "runner_hand_off", 0.0)  # what speed.py subtracts
            record["runner_empty"], record["runner_hand_off"] = runner_empty(bench)
        write(record)
        return result

    def time_candidate(state, reference, *rest):
        ctx = state.ctx
        write({"job": True, "clean_hand_off": ctx.hand_off_s, "clean_flush": ctx.flush_s,
               "clean_probe": ctx.probe_s, "scale": SCALE})
        return original_time(state, reference, *rest)

    speed.repetition, speed.time_candidate = repetition, time_candidate


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "tritongym.evaluate.judge.speed":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        loader.exec_module = exec_module
        return spec


if LOG:
    sys.meta_path.insert(0, _Finder())
"""


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def in_process(problem, count: int, reps: int = 11) -> dict:
    """Part A: per-call microseconds of the reference, the A/A candidate, its slot copies and the
    twin's stand-in copies, batches of ``count`` fresh input sets, each bracket after a hold and an
    L2 flush (medians of ``reps``)."""
    import importlib.util

    from benchmarks.timing_aa import aa_source

    path = Path(tempfile.mkdtemp()) / f"aa_{problem.name}.py"  # Triton reads a kernel's source from its file
    path.write_text(aa_source(problem))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    with torch.device("cuda"):
        init = namespace["get_init_inputs"]()
        reference = namespace[problem.entry_point](*init).cuda().eval()
        candidate = namespace[f"{problem.entry_point}New"](*init).cuda().eval()
    candidate.load_state_dict(reference.state_dict())
    with torch.device("cuda"):
        sets = [[t.cuda() for t in namespace["get_inputs"]()] for _ in range(count)]
    with torch.no_grad():
        sample = reference(*sets[0])
    slots = torch.empty((count, *sample.shape), dtype=sample.dtype, device="cuda")
    kept = torch.empty_like(slots)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    scratch = torch.empty(4 * l2, dtype=torch.int8, device="cuda")
    rate = _sleep_rate()

    def bracket(work) -> float:
        torch.cuda._sleep(int(0.004 * rate))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        scratch.zero_()
        work()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3  # us

    def ref():
        for args in sets:
            reference(*args)

    def cand():
        for args in sets:
            candidate(*args)

    def cand_copy():
        for k, args in enumerate(sets):
            slots[k].copy_(candidate(*args))

    def twin_copy():
        for k in range(count):
            slots[k].copy_(kept[-1])

    def flush_only():
        pass

    works = {"flush": flush_only, "reference": ref, "candidate": cand, "candidate_copy": cand_copy,
             "twin_copy": twin_copy}  # fmt: skip
    times: dict[str, list[float]] = {k: [] for k in works}
    with torch.no_grad():
        for work in works.values():
            bracket(work)
        for _ in range(reps):
            for name, work in works.items():
                times[name].append(bracket(work))
    med = {k: _median(v) for k, v in times.items()}
    flush = med["flush"]
    per = {k: (v - flush) / count for k, v in med.items() if k != "flush"}
    return {
        "count": count,
        "output_strides": list(sample.stride()),
        "reference_us": per["reference"],
        "candidate_us": per["candidate"],
        "token_us": per["candidate"] - per["reference"],
        "runner_copy_us": per["candidate_copy"] - per["candidate"],
        "twin_copy_us": per["twin_copy"],
        "aa_expected": per["reference"] / per["candidate"],
    }


def _sleep_rate() -> float:
    rate = 0.0
    for _ in range(2):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        rate = 1_000_000 / (start.elapsed_time(end) / 1e3)
    return rate


def judge_pass(problems: list, variant: str, budget: float, folder: Path) -> list[dict]:
    """Part B: one evaluation per problem in a judge patched by the sitecustomize, its repetitions."""
    from benchmarks.timing_aa import aa_source
    from tritongym.env import LocalEnv, PoolConfig, Task
    from tritongym.evaluate import EvalConfig, sandbox

    log = folder / f"reps_{variant}.jsonl"
    log.touch()
    log.chmod(0o666)
    original_env = sandbox.sandbox_env

    def patched_env(home, interpret, extra):
        env = original_env(home, interpret, extra)
        env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}"
        env["TG_DIAG_LOG"] = str(log)
        env["TG_DIAG_SCALE"] = json.dumps(VARIANTS[variant])
        return env

    sandbox.sandbox_env = patched_env
    config = EvalConfig(device="cuda", torch_compute="allow", timing_budget_s=budget)
    tasks = [Task(p, aa_source(p), p.name) for p in problems]
    results = []
    try:
        with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
            for task, result in env.evaluate_many(tasks, config):
                timing = result.timing
                results.append({"problem": task.problem.name, "verdict": str(result.verdict),
                                "speedup": result.speedup,
                                "timing": None if timing is None else vars(timing),
                                "token_profiled_us": next((k.time_us for k in result.kernels if k.own),
                                                          None)})  # fmt: skip
    finally:
        sandbox.sandbox_env = original_env
    jobs: list[list[dict]] = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("job"):
            jobs.append([record])
        elif jobs:
            jobs[-1].append(record)
    for entry, job in zip(results, jobs, strict=False):
        entry["clean"] = job[0]
        entry["reps"] = job[1:]
        entry["parts"] = parts(job[0], job[1:])
    return results


def parts(clean: dict, reps: list[dict]) -> dict:
    """Medians (us per batch and per call) of the timed repetitions' parts."""
    timed = [r for r in reps if r["rep"] > 0 and "candidate" in r and not r.get("contended")]
    if not timed:
        return {}
    count = timed[-1]["count"]
    keys = ("reference", "candidate", "empty", "remote_empty", "hand_off", "runner_empty", "runner_hand_off")
    m = {k: _median([r[k] * 1e6 for r in timed if r.get(k) is not None]) for k in keys}
    capped = min(m["hand_off"], clean["clean_hand_off"] * 1e6 * 1.1)
    return {
        "count": count,
        "reps": len(timed),
        "clean_hand_off_us": clean["clean_hand_off"] * 1e6,
        **{f"{k}_us": round(v, 2) for k, v in m.items()},
        "ref_net_per_call_us": (m["reference"] - m["empty"]) / count,
        "cand_net_per_call_us": (m["candidate"] - (m["remote_empty"] - m["hand_off"]) - capped) / count,
        "cand_net_uncapped_per_call_us": (m["candidate"] - m["remote_empty"]) / count,
        "cand_net_runner_empty_per_call_us": (m["candidate"] - m["runner_empty"]) / count,
        "excess_hand_off_us": m["hand_off"] - capped,
        "runner_minus_twin_empty_us": m["runner_empty"] - m["remote_empty"],
        "candidate_first_ratio": _median([r["reference"] / r["candidate"] for r in timed if r["candidate_first"]]),
        "reference_first_ratio": _median([r["reference"] / r["candidate"] for r in timed if not r["candidate_first"]]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--skip-in-process", action="store_true")
    args = parser.parse_args()
    from tritongym.problems import load_bundled

    problems = [p for p in load_bundled() if p.name in args.problems]
    report: dict = {"machine": {"gpu": torch.cuda.get_device_name(0), "python": platform.python_version(),
                                "torch": torch.__version__, "triton": triton.__version__}}  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="timing-parts-"))
    folder.chmod(0o755)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    os.chmod(folder / "sitecustomize.py", 0o644)
    report["judge"] = {v: judge_pass(problems, v, args.budget, folder) for v in args.variants}
    args.out.write_text(json.dumps(report, indent=1, default=str))
    if not args.skip_in_process:
        counts = {e["problem"]: (e.get("parts") or {}).get("count", 16) for e in report["judge"][args.variants[0]]}
        report["in_process"] = {p.name: in_process(p, counts.get(p.name) or 16) for p in problems}
        args.out.write_text(json.dumps(report, indent=1, default=str))
    for variant, entries in report["judge"].items():
        print(
            f"== {variant}: per batch us (ref, cand, empty, twin_empty, hand_off, runner_empty, runner_hand_off, "
            "clean_hand_off) | per call us (ref net, cand net, uncapped, by runner empty) | speedup"
        )
        for e in entries:
            q = e.get("parts") or {}
            if not q:
                print(f"{e['problem']:28s} {e['verdict']} no parts")
                continue
            print(f"{e['problem'][:26]:26s} N={q['count']:4d} "
                  + " ".join(f"{q[k]:8.1f}" for k in ("reference_us", "candidate_us", "empty_us", "remote_empty_us",
                                                       "hand_off_us", "runner_empty_us", "runner_hand_off_us",
                                                       "clean_hand_off_us"))
                  + " | " + " ".join(f"{q[k]:7.2f}" for k in ("ref_net_per_call_us", "cand_net_per_call_us",
                                                               "cand_net_uncapped_per_call_us",
                                                               "cand_net_runner_empty_per_call_us"))
                  + f" | {e['speedup']} cf {q['candidate_first_ratio']:.4f} "
                    f"rf {q['reference_first_ratio']:.4f}")  # fmt: skip
    for name, a in report.get("in_process", {}).items():
        print(
            f"in-process {name[:26]:26s} N={a['count']:4d} ref {a['reference_us']:8.2f} token {a['token_us']:6.2f} "
            f"runner copy {a['runner_copy_us']:7.2f} twin copy {a['twin_copy_us']:7.2f} aa {a['aa_expected']:.4f}"
        )


if __name__ == "__main__":
    main()
