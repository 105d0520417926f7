"""Diagnostic of false contention alarms (issue 12): the judge's fixed workloads, repetition by repetition.

Honest candidates of real KernelBench problems (level 3's 1_MLP, 4_LeNet5, 35_LSTM, the lazy
candidate of benchmarks/kernelbench_inductor.py) lost their speedup to "most repetitions contended"
with nothing else on the GPU. This runs such candidates (and bundled A/A ones, benchmarks/timing_aa.py)
through a real judge (LocalEnv, one sandbox) whose speed.py a ``sitecustomize`` patches to log, for
every repetition: each bracket's kind, length, input copy, L2 flush and end probe, how long its hold
held the GPU (a flag hold, speed.Holds: its SM clock is not known, ``clock_mhz`` None; logs made with the
sleep holds before session 14's throughput11 have it), each
hand-off (to the twin after every bracket, the twin's inside its empty bracket, the runner's) and
the repetition's contention verdict; per job, the clean values of the judge's start and the same
workloads measured again before the timing and after it (in the state the forwards leave). Part A,
in this process (no runner, no twin): the flush and probe around the reference's forwards as a bracket
has them, with the clock, and behind an idle GPU, to tell the GPU's own state from company.

    python benchmarks/timing_alarms.py --kernelbench build/KernelBench/level3 --out /tmp/alarms.json
    bash benchmarks/gpu_run.sh alarms      # the same on the device
    python benchmarks/timing_alarms.py --replay /tmp/alarms.json --out /tmp/replayed.json   # on the CPU
    python benchmarks/timing_alarms.py --honest kb_reduce_dim atomics --problems --skip-in-process \
        --out /tmp/honest.json   # honest candidates (tests/candidates/honest) at their small sizes

Every repetition also logs, for each hold, whether it timed out before its bracket (or hand-off) was
queued (``queued``, ``start_fired``: the hold's outcome, holds.py), and for
each hand-off to the twin whether the GPU timed it (``handed`` not fired once the twin had queued
its wait).

Writes one JSON file (machine, versions, every repetition) and prints a per-job table. ``--replay``
re-judges a logged run's repetitions with timing.contention as the judge did before the fix of
speed.gpu_timed (every probe, the clean values calibrated on an idle GPU) and after it (probes the
GPU timed only, clean values calibrated behind a hold).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch
import triton

KERNELBENCH = ("1_MLP", "4_LeNet5", "35_LSTM")
MORE = ("7_GoogleNetInceptionV1", "10_ResNet101", "31_VisionAttention", "33_VanillaRNN", "30_SwinTransformerV2")
"""The sweep's other false alarms (``--problems`` takes them by name)."""
BUNDLED = ("13_row_argmax",)

SITECUSTOMIZE = r"""
import importlib.abc, importlib.machinery, json, os, sys, time

LOG = os.environ.get("TG_ALARM_LOG")
CURRENT = {"items": [], "label": None}


def _patch(speed):
    import torch
    from tritongym.evaluate import timing
    from tritongym.evaluate.judge import twin as twin_module

    holds = {}
    twin_timed = []

    def write(record):
        with open(LOG, "a") as fh:
            fh.write(json.dumps(record) + "\n")

    original_open, original_close = speed.Bench._open, speed.Bench._close

    def _open(self, kind, sets):
        before = torch.cuda.Event(enable_timing=True)
        before.record()
        opened = original_open(self, kind, sets)
        holds[id(opened)] = before
        return opened

    def _close(self, opened):
        late = self.late
        bracket = original_close(self, opened)
        before = holds.pop(id(opened))
        start, flush_start, flush_end, probe_start, end = opened.events
        CURRENT["items"].append({
            "bracket": CURRENT["label"], "kind": opened.kind, "late": self.late > late,
            "held_s": before.elapsed_time(start) / 1e3, "clock_mhz": None,  # a flag hold: no known cycle count
            "seconds": start.elapsed_time(end) / 1e3, "copy_s": start.elapsed_time(flush_start) / 1e3,
            "flush_s": flush_start.elapsed_time(flush_end) / 1e3, "probe_s": probe_start.elapsed_time(end) / 1e3,
            "flush_timed": opened.flush_timed, "probe_timed": bool(bracket.probe_s), "t": time.time()})
        return bracket

    original_hand_to_twin, original_settle = speed.Bench._hand_to_twin, speed.Bench._settle

    def _hand_to_twin(self):
        handed, back = original_hand_to_twin(self)
        twin_timed.append(not handed.query())  # the twin's wait queued before the GPU reached handed
        return handed, back

    def _settle(self, kind, hold):
        value = original_settle(self, kind, hold)
        CURRENT["items"].append({"queued": kind, "after": CURRENT["label"], "start_fired": value, "counted": True})
        return value

    speed.Bench._hand_to_twin, speed.Bench._settle = _hand_to_twin, _settle

    def labelled(name):
        original = getattr(speed.Bench, name)

        def method(self, *args, **kwargs):
            CURRENT["label"] = name
            value = original(self, *args, **kwargs)
            if name == "remote_empty_batch":
                CURRENT["items"].append({"hand_off": "twin_in_bracket", "s": value[1],
                                         "gpu_timed": twin_timed[-1] if twin_timed else None, "t": time.time()})
            elif name == "runner_hand_off":
                CURRENT["items"].append({"hand_off": "runner", "s": value, "t": time.time()})
            return value

        setattr(speed.Bench, name, method)

    for name in ("reference_batch", "candidate_batch", "empty_batch", "remote_empty_batch", "runner_hand_off"):
        labelled(name)
    original_check = speed.Bench.company_check

    def company_check(self):
        value = original_check(self)
        CURRENT["items"].append({"hand_off": "check", "after": CURRENT["label"], "s": value,
                                 "gpu_timed": twin_timed[-1] if twin_timed else None, "t": time.time()})
        return value

    speed.Bench._open, speed.Bench._close, speed.Bench.company_check = _open, _close, company_check
    original_rep, original_time = speed.repetition, speed.time_candidate

    def repetition(bench, model, rep, candidate_first, clean):
        CURRENT["items"] = []
        began = time.time()
        result = original_rep(bench, model, rep, candidate_first, clean)
        write({"rep": rep, "count": bench.count, "candidate_first": candidate_first, "late": bench.late,
               "t0": began, "t1": time.time(), "queued_in_time": True,  # a late bracket counts (holds.py)
               "contended": result.contended, "reference": result.reference, "candidate": result.candidate,
               "items": CURRENT["items"]})
        return result

    def workloads(ctx):
        holds = speed.Holds(ctx.sleep_rate)
        flush, probe = speed.calibrate_workloads(ctx.device, holds)
        hand_off = twin_module.calibrate(ctx.twin, holds, reps=21)
        return {"flush": flush, "probe": probe, "hand_off": hand_off, "clock_mhz": clock(ctx)}

    def clock(ctx):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(200_000)
        end.record()
        end.synchronize()
        return 200_000 / (start.elapsed_time(end) / 1e3) / 1e6

    def time_candidate(state, reference):
        ctx = state.ctx
        twin_module.ensure_twin(ctx)
        write({"job": True, "clean": {"flush": ctx.flush_s, "probe": ctx.probe_s, "hand_off": ctx.hand_off_s},
               "sleep_rate_mhz": ctx.sleep_rate / 1e6, "before": workloads(ctx), "t": time.time()})
        try:
            return original_time(state, reference)
        finally:
            write({"after": workloads(ctx), "t": time.time()})

    speed.repetition, speed.time_candidate = repetition, time_candidate


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "tritongym.evaluate.judge.speed":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if LOG:
    sys.meta_path.insert(0, _Finder())
"""

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
"""benchmarks/kernelbench_inductor.py's lazy candidate (the problem's own PyTorch, one trivial launch)."""


def honest(names: list[str]) -> list[tuple[object, str]]:
    """(problem, source) of honest candidates (tests/candidates/honest/NAME.py) on the problem each
    header names, at its small sizes (as tests/test_honest_candidates.py judges them)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_honest_candidates import HONEST, _header, _problem

    chosen = []
    for name in names:
        source = (HONEST / f"{name}.py").read_text()
        chosen.append((_problem(_header(source, "problem")), source))
    return chosen


def problems(kernelbench: Path | None, names: list[str]) -> list[tuple[object, str]]:
    """(problem, candidate source) of the named KernelBench problems (lazy) and bundled ones (A/A)."""
    from benchmarks.timing_aa import aa_source
    from tritongym.problems import load_bundled, load_problems

    chosen = []
    if kernelbench is not None:
        for p in load_problems(kernelbench):
            if p.name in names:
                chosen.append((p.prepare(), p.source.rstrip() + "\n" + LAZY_SUFFIX))
    chosen += [(p, aa_source(p)) for p in load_bundled() if p.name in names]
    return chosen


def judge_pass(chosen: list, budget: float, folder: Path) -> list[dict]:
    """One evaluation per problem in a judge patched by the sitecustomize; its log, job by job."""
    from tritongym.env import LocalEnv, PoolConfig, Task
    from tritongym.evaluate import EvalConfig, sandbox

    log = folder / "alarms.jsonl"
    log.touch()
    log.chmod(0o666)
    original_env = sandbox.sandbox_env

    def patched_env(home, interpret, extra):
        env = original_env(home, interpret, extra)
        env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}"
        env["TG_ALARM_LOG"] = str(log)
        return env

    sandbox.sandbox_env = patched_env
    config = EvalConfig(device="cuda", torch_compute="allow", timing_budget_s=budget)
    results = []
    try:
        with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
            for task, result in env.evaluate_many([Task(p, src, p.name) for p, src in chosen], config):
                timing = result.timing
                results.append({"problem": task.problem.name, "verdict": str(result.verdict), "speedup": result.speedup,
                                "timing": None if timing is None else vars(timing),
                                "findings": [vars(f) for f in result.findings]})  # fmt: skip
    finally:
        sandbox.sandbox_env = original_env
    jobs: list[dict] = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("job"):
            jobs.append({"job": record, "reps": []})
        elif jobs and "after" in record:
            jobs[-1]["after"] = record
        elif jobs:
            jobs[-1]["reps"].append(record)
    for entry, job in zip(results, jobs, strict=False):
        entry |= job
        entry["digest"] = digest(job)
    return results


def _stats(values: list[float]) -> dict:
    values = [v for v in values if v]
    if not values:
        return {}
    return {"n": len(values), "median_us": round(statistics.median(values) * 1e6, 1),
            "max_us": round(max(values) * 1e6, 1), "min_us": round(min(values) * 1e6, 1)}  # fmt: skip


def digest(job: dict) -> dict:
    """Per workload and place: medians and maxima (us) over the timed repetitions, against clean."""
    timed = [r for r in job["reps"] if r["rep"] > 0 and r["queued_in_time"]]
    out: dict = {"clean_us": {k: round(v * 1e6, 1) for k, v in job["job"]["clean"].items()},
                 "before_us": {k: round(v * 1e6, 1) for k, v in job["job"]["before"].items() if k != "clock_mhz"},
                 "after_us": {k: round(v * 1e6, 1) for k, v in job.get("after", {}).get("after", {}).items()
                              if k != "clock_mhz"},
                 "clock_mhz": {"judge_start": round(job["job"]["sleep_rate_mhz"]),
                               "before": round(job["job"]["before"]["clock_mhz"]),
                               "after": round(job.get("after", {}).get("after", {}).get("clock_mhz", 0))},
                 "reps": len(job["reps"]), "timed": len(timed),
                 "contended": [r["contended"] for r in timed if r["contended"]]}  # fmt: skip
    for label in ("reference_batch", "candidate_batch", "empty_batch", "remote_empty_batch", "runner_hand_off"):
        items = [i for r in timed for i in r["items"] if i.get("bracket") == label]
        out[label] = {w: _stats([i[w] for i in items]) for w in ("flush_s", "probe_s", "copy_s", "seconds")}
        out[label]["probe_gpu_timed"] = f"{sum(bool(i.get('probe_timed')) for i in items)}/{len(items)}"
        out[label]["probe_gpu_timed_max_us"] = round(
            max((i["probe_s"] for i in items if i.get("probe_timed")), default=0.0) * 1e6, 1
        )
        clocks = [i["clock_mhz"] for i in items if i.get("clock_mhz")]  # None behind a flag hold (holds.py)
        out[label]["clock_mhz"] = [round(min(clocks)) if clocks else 0,
                                   round(statistics.median(clocks)) if clocks else 0]  # fmt: skip
    for place in ("reference_batch", "candidate_batch", "empty_batch", "runner_hand_off"):
        out[f"check_after_{place}"] = _stats(
            [i["s"] for r in timed for i in r["items"] if i.get("hand_off") == "check" and i["after"] == place]
        )
    twins = [i for r in timed for i in r["items"] if i.get("hand_off") == "twin_in_bracket"]
    out["twin_in_bracket_gpu_timed"] = f"{sum(bool(i.get('gpu_timed')) for i in twins)}/{len(twins)}"
    late = collections.Counter(
        i["after"] for r in job["reps"] for i in r["items"] if "queued" in i and i["start_fired"]
    )
    out["queued_late"] = dict(late)  # by bracket: the hold had ended before it was queued
    out["counts"] = sorted({r["count"] for r in job["reps"]})
    out["twin_in_bracket"] = _stats(
        [i["s"] for r in timed for i in r["items"] if i.get("hand_off") == "twin_in_bracket"]
    )
    out["runner"] = _stats([i["s"] for r in timed for i in r["items"] if i.get("hand_off") == "runner"])
    return out


def replay(job: dict, clean, gpu_timed_only: bool) -> int:
    """Contended repetitions of a logged job (``judge_pass``) as timing.contention sees them with
    ``clean`` workloads: every logged flush, probe and hand-off, or (``gpu_timed_only``) the probes
    of local brackets queued in time only, as speed.gpu_timed keeps them (a remote bracket's probe
    is queued once ``done`` fired; a reference bracket counted late waited for the GPU)."""
    from tritongym.evaluate import timing

    contended, late = 0, 0
    for rep in job["reps"]:
        counted_late, late = rep["late"] > late, rep["late"]
        if rep["rep"] == 0 or not rep["queued_in_time"]:
            continue
        brackets = [i for i in rep["items"] if "bracket" in i]
        timed = [i["kind"] == "local" and not (counted_late and i["bracket"] == "reference_batch") for i in brackets]
        probes = [i["probe_s"] if ok or not gpu_timed_only else 0.0 for i, ok in zip(brackets, timed, strict=True)]
        hand_offs = [i["s"] for i in rep["items"] if "hand_off" in i]
        contended += bool(timing.contention([i["flush_s"] for i in brackets], probes, hand_offs, clean))
    return contended


def replay_report(report: dict) -> list[dict]:
    """Per job: contended repetitions logged, replayed with the judge's rule before this fix (every
    probe, the clean values of the log) and after it (GPU-timed probes, clean flush and probe of the
    in-process calibration behind a hold, ``in_process``'s idle medians)."""
    from tritongym.evaluate import timing

    idle = [r for a in report.get("in_process", {}).values() for r in a["rows"]]
    rows = []
    for e in report["judge"]:
        c = e["job"]["clean"]
        before = timing.Clean(c["flush"], c["probe"], c["hand_off"])
        after = before
        if idle:
            after = timing.Clean(statistics.median(r["idle_flush_s"] for r in idle),
                                 statistics.median(r["idle_probe_s"] for r in idle), c["hand_off"])  # fmt: skip
        rows.append({"problem": e["problem"], "timed_reps": e["digest"]["timed"],
                     "logged": len(e["digest"]["contended"]), "replayed_before": replay(e, before, False),
                     "replayed_after": replay(e, after, True), "clean_after_us": [after.flush_s * 1e6,
                     after.probe_s * 1e6]})  # fmt: skip
    return rows


# --- part A: in this process ---------------------------------------------------------------------


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


def in_process(problem, reps: int = 8) -> dict:
    """The flush and probe around the reference's forwards, as a bracket has them (hold, flush,
    forwards, probe), with the hold's clock; then the same workloads on a GPU left idle for 20 ms
    after the forwards (behind a hold), and behind no hold right after the forwards."""
    from tritongym.evaluate.judge import speed

    namespace: dict = {}
    path = Path(tempfile.mkdtemp()) / f"ref_{problem.name}.py"
    path.write_text(problem.source)
    exec(compile(problem.source, str(path), "exec"), namespace)
    with torch.device("cuda"):
        model = namespace[problem.entry_point](*namespace["get_init_inputs"]()).cuda().eval()
    sample = [t.cuda() if isinstance(t, torch.Tensor) else t for t in namespace["get_inputs"]()]
    with torch.no_grad():
        model(*sample)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(*sample)
        end.record()
        end.synchronize()
    one = start.elapsed_time(end) / 1e3
    count = max(1, min(512, int(-(-speed.TARGET_BATCH_S // one))))
    sets = [[t.cuda() if isinstance(t, torch.Tensor) else t for t in namespace["get_inputs"]()] for _ in range(count)]
    flush_bytes, probe_bytes = speed.workload_bytes(0)
    scratch = torch.empty(flush_bytes, dtype=torch.int8, device="cuda")
    rate = _sleep_rate()
    clean_flush, clean_probe = speed.calibrate_workloads(torch.device("cuda"), speed.Holds(rate))
    rows = []

    probe = scratch[:probe_bytes]

    def timed(work) -> tuple:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        work()
        b.record()
        return a, b

    with torch.no_grad():
        for _ in range(reps):
            before = torch.cuda.Event(enable_timing=True)
            before.record()
            cycles = int(0.002 * rate)
            torch.cuda._sleep(cycles)
            hold_end = torch.cuda.Event(enable_timing=True)
            hold_end.record()
            flush = timed(scratch.zero_)
            for args in sets:
                model(*args)
            probed = timed(probe.zero_)
            flush_after = timed(scratch.zero_)  # right after the probe: no hold
            torch.cuda.synchronize()
            time.sleep(0.02)  # the GPU idle, as between a job's brackets
            idle_before = torch.cuda.Event(enable_timing=True)
            idle_before.record()
            torch.cuda._sleep(cycles)
            idle_hold_end = torch.cuda.Event(enable_timing=True)
            idle_hold_end.record()
            idle_flush = timed(scratch.zero_)
            idle_probe = timed(probe.zero_)
            torch.cuda.synchronize()
            rows.append({
                "clock_mhz": cycles / (before.elapsed_time(hold_end) / 1e3) / 1e6,
                "flush_s": flush[0].elapsed_time(flush[1]) / 1e3, "probe_s": probed[0].elapsed_time(probed[1]) / 1e3,
                "flush_after_forwards_s": flush_after[0].elapsed_time(flush_after[1]) / 1e3,
                "idle_clock_mhz": cycles / (idle_before.elapsed_time(idle_hold_end) / 1e3) / 1e6,
                "idle_flush_s": idle_flush[0].elapsed_time(idle_flush[1]) / 1e3,
                "idle_probe_s": idle_probe[0].elapsed_time(idle_probe[1]) / 1e3,
            })  # fmt: skip
    del model, sets, scratch, probe
    torch.cuda.empty_cache()
    return {"count": count, "call_s": one, "clean_flush_s": clean_flush, "clean_probe_s": clean_probe,
            "sleep_rate_mhz": rate / 1e6, "rows": rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kernelbench", type=Path, default=None, help="A KernelBench level 3 directory.")
    parser.add_argument("--problems", nargs="*", default=[*KERNELBENCH, *BUNDLED])
    parser.add_argument("--honest", nargs="*", default=[], help="Honest candidates (tests/candidates/honest) by name.")
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--skip-in-process", action="store_true")
    parser.add_argument("--replay", type=Path, help="Only replay a logged run (this script's --out) on the CPU.")
    args = parser.parse_args()
    if args.replay:
        rows = replay_report(json.loads(args.replay.read_text()))
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
        for row in rows:
            print(row)
        return
    chosen = problems(args.kernelbench, args.problems) + honest(args.honest)
    report: dict = {"machine": {"gpu": torch.cuda.get_device_name(0), "python": platform.python_version(),
                                "torch": torch.__version__, "triton": triton.__version__}}  # fmt: skip
    if not args.skip_in_process:
        report["in_process"] = {p.name: in_process(p) for p, _ in chosen if p.name not in BUNDLED}
        args.out.write_text(json.dumps(report, indent=1, default=str))
    folder = Path(tempfile.mkdtemp(prefix="timing-alarms-"))
    folder.chmod(0o755)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    os.chmod(folder / "sitecustomize.py", 0o644)
    report["judge"] = judge_pass(chosen, args.budget, folder)
    args.out.write_text(json.dumps(report, indent=1, default=str))
    for name, a in report.get("in_process", {}).items():
        rows = a["rows"]

        def med(key: str, rows: list = rows) -> float:
            return statistics.median(r[key] for r in rows) * 1e6

        print(f"in-process {name:14s} N={a['count']:3d} clean flush {a['clean_flush_s'] * 1e6:6.1f} probe "
              f"{a['clean_probe_s'] * 1e6:5.1f} | bracket flush {med('flush_s'):6.1f} probe {med('probe_s'):6.1f} "
              f"flush after fwd {med('flush_after_forwards_s'):6.1f} clock {min(r['clock_mhz'] for r in rows):5.0f} | "
              f"idle flush {med('idle_flush_s'):6.1f} probe {med('idle_probe_s'):6.1f} clock "
              f"{min(r['idle_clock_mhz'] for r in rows):5.0f}")  # fmt: skip
    for e in report["judge"]:
        d = e.get("digest", {})
        print(f"== {e['problem']}: {e['verdict']} speedup {e['speedup']} reps {d.get('reps')} timed {d.get('timed')} "
              f"contended {len(d.get('contended', []))}; clean {d.get('clean_us')} before {d.get('before_us')} "
              f"after {d.get('after_us')} clock {d.get('clock_mhz')}")  # fmt: skip
        for reason in d.get("contended", [])[:6]:
            print("   contended:", reason)
        for key in ("reference_batch", "candidate_batch", "empty_batch", "remote_empty_batch", "runner_hand_off"):
            q = d.get(key, {})
            print(
                f"   {key:20s} flush {q.get('flush_s')} probe {q.get('probe_s')} clock {q.get('clock_mhz')} "
                f"probe timed by the GPU {q.get('probe_gpu_timed')} (max {q.get('probe_gpu_timed_max_us')} us)"
            )
        for key in ("check_after_reference_batch", "check_after_candidate_batch", "check_after_empty_batch",
                    "check_after_runner_hand_off", "twin_in_bracket", "runner"):  # fmt: skip
            print(f"   hand-off {key:30s} {d.get(key)}")
        print(f"   batch calls {d.get('counts')}; queued after the hold ended {d.get('queued_late')}; twin's "
              f"hand-off in its bracket timed by the GPU {d.get('twin_in_bracket_gpu_timed')}")  # fmt: skip


if __name__ == "__main__":
    main()
