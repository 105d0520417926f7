"""Host cost of kernel launches: a plain process against a runner's settings, one at a time.

Why do forwards with many launches read slow in the Inductor A/A test (34_VanillaRNNHidden 0.154)?
Either (a) the standalone solution's launch path is slower than torch.compile's, or (b) a runner
launches the same code more slowly than an ordinary process. Each setting runs in a fresh process
(``--child``) that loads the problem and its standalone solution, warms both up, applies the
setting, then times on the host (no synchronisation inside a loop) and on the GPU (events):

* ``solution``: the standalone solution's forward (Inductor's code, its kernels' launchers);
* ``compiled``: torch.compile of the reference, as the judge's ``--baseline compile`` makes it;
* ``triton``: a one-element ``@triton.jit`` kernel launched through ``JITFunction.run``;
* ``torch``: a one-element ``add_`` (PyTorch's own launch path).

Settings: ``plain``; ``one_queue`` (``CUDA_DEVICE_MAX_CONNECTIONS=1``, what the judge gives the
runner of a single-stream reference); ``witness`` (one forward under the runner's guards first:
OpWitness, LaunchMonitor, OpRecorder, as a trial); ``profile`` (the runner's own profile of a forward
first, ``profile_forward``, as before its timing; ``profile_teardown`` the same with
``TEARDOWN_CUPTI=1``); ``hardened`` (the runner's hardening after warming up: capabilities dropped,
Landlock, seccomp, the watchdog thread); ``runner`` (all of them, in the runner's order, one queue).

With ``--kb-level`` the real judge runs next (a LocalEnv pool of one judge, ``--baseline compile``,
the at-scale check's settings) on the solution with ``INSTRUMENT`` appended: its forward times its
own host time in the runner and, at call ``INSTRUMENTED_CALLS`` (past the trials, inside the timing),
fails with what it measured in its message, which the feedback carries out. ``--pools``: a pool
that gives the runner the judge's choice of work queues (one for a single-stream reference) and
one whose runners all get the driver's default of 8 (``PoolConfig.runner_work_queues``).

Cost (H200, session 11, 34_VanillaRNNHidden at full size): its solution has 258 distinct Triton
kernels; generating it took 54 s, and each judge evaluation 84-155 s (the runner's first trial
compiles every kernel, 60 s; the judge's torch.compile baseline, 64 s, once per pool). A cheaper
problem with the same structure: the problem file with ``sequence_length`` cut (64 steps: 66
kernels), generated with ``kernelbench_inductor.py --step generate`` from a copy.

    python benchmarks/launch_rate.py --problem build/KernelBench/level3/34_VanillaRNNHidden.py \\
        --solution OUT/solutions/34_VanillaRNNHidden.py --out OUT/launch_rate.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = ("plain", "one_queue", "witness", "profile", "profile_teardown", "hardened", "runner")
COMPILED_IN = ("plain", "one_queue", "profile")
"""Settings whose child also times torch.compile of the reference (its compile costs 10-20 s)."""


INSTRUMENTED_CALLS = 12
INSTRUMENT = """

import time as _launchrate_time


class _LaunchRate(ModelNew):
    \"\"\"ModelNew timing its own forward's host time (seconds from its call to its return, nothing
    synchronised) in the runner.\"\"\"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._spans = []

    def forward(self, *args):
        begun = _launchrate_time.perf_counter()
        out = super().forward(*args)
        self._spans.append((begun, _launchrate_time.perf_counter()))
        if len(self._spans) == CALLS:
            raise RuntimeError("LAUNCHRATE " + _launchrate_summary(self._spans))
        return out


def _launchrate_summary(spans):
    host = [end - begun for begun, end in spans]
    # a call begun within 2 ms of the last one's return is a timing batch's later call
    first = [host[0]] + [host[k] for k in range(1, len(spans)) if spans[k][0] - spans[k - 1][1] > 2e-3]
    later = [host[k] for k in range(1, len(spans)) if spans[k][0] - spans[k - 1][1] <= 2e-3]
    ms = lambda xs: sorted(round(x * 1e3, 2) for x in xs)
    return repr({"first_ms": ms(first)[len(first) // 2], "later_ms": ms(later)[len(later) // 2] if later else None,
                 "groups": len(first), "calls": len(spans),
                 "last": [(round(host[k] * 1e3, 1), round((spans[k][0] - spans[k - 1][1]) * 1e3, 1))
                          for k in range(max(1, len(spans) - 20), len(spans))]})


ModelNew = _LaunchRate
""".replace("CALLS", str(INSTRUMENTED_CALLS))
"""Appended to a solution: ``ModelNew`` timing its own host time in the runner. A forward that
begins within 2 ms of the previous one's return is a timing batch's later call (the host may have
waited there for the GPU: the launch queue full); the first call of each group (a trial, the
profile, a batch's first) had an empty queue before it. ``last``: (host ms, ms since the previous
call returned) of the last 20 calls."""


def judged(kb_level: str, name: str, solution: str, rows: list, save, pools: str) -> None:
    """The real judge on the solution's instrumented copy (its speedup is the judge's reading of the
    solution: the instrumentation adds two clock reads a call) in each pool of ``pools``: ``choice``
    (the judge's choice of work queues: one for a single-stream reference) or a count every runner
    gets (8: the driver's default, the judge's own)."""
    from tritongym.env import LocalEnv, PoolConfig, Task
    from tritongym.evaluate import EvalConfig
    from tritongym.problems import load_problems

    problem = next(p for p in load_problems(kb_level) if p.name == name).prepare()
    source = Path(solution).read_text()
    config = EvalConfig(device="cuda", baseline="compile", timing_budget_s=2.0, max_source_bytes=1 << 22)
    for pool in filter(None, pools.split(",")):
        queues = None if pool == "choice" else int(pool)
        with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1, runner_work_queues=queues)) as env:
            for label, candidate in (("instrumented", source.rstrip() + "\n" + INSTRUMENT),):
                started = time.monotonic()
                result = env.evaluate_batch([Task(problem, candidate, label)], config)[0]
                timing = result.timing
                row = {
                    "runner_work_queues": queues or "judge's choice",
                    "candidate": label,
                    "verdict": str(result.verdict),
                    "speedup": result.speedup,
                    "reference_ms": timing and timing.reference_ms,
                    "candidate_ms": timing and timing.candidate_ms,
                    "late_brackets": timing and timing.late_brackets,
                    "late_by": timing and timing.late_by,
                    "reps": timing and timing.reps,
                    "feedback": result.feedback[:1500],
                    "stages": result.stage_seconds,
                    "seconds": round(time.monotonic() - started, 1),
                }
                rows.append(row)
                save()
                print(json.dumps({k: v for k, v in row.items() if k != "stages"}), flush=True)


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _timed(fn, n: int, reps: int = 5) -> dict:
    """Median over ``reps`` of: host seconds per call to enqueue ``n`` calls, and wall and GPU (events)
    seconds per call once they finished."""
    import torch

    host, wall, gpu = [], [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(n):
            fn()
        end.record()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) / n)
        wall.append((t2 - t0) / n)
        gpu.append(start.elapsed_time(end) / 1e3 / n)
    return {"host_s": statistics.median(host), "wall_s": statistics.median(wall), "gpu_s": statistics.median(gpu)}


def _launchers(module) -> dict:
    """How the solution's Inductor kernels launch: the class of each CachingAutotuner's launcher and
    compile result, counted."""
    counts: dict[str, int] = {}
    for value in vars(module).values():
        for launcher in getattr(value, "launchers", None) or []:
            key = f"launcher={type(launcher).__qualname__}:{getattr(launcher, '__name__', '')}"
            counts[key] = counts.get(key, 0) + 1
        for result in getattr(value, "compile_results", None) or []:
            key = f"compile_result={type(result).__qualname__}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def child(setting: str, problem_path: str, solution_path: str) -> dict:
    import torch
    import torch._inductor.config as inductor_config
    import triton
    import triton.language as tl

    from tritongym.evaluate.guards import LaunchMonitor, OpRecorder, OpWitness

    device = torch.device("cuda")
    torch.cuda.set_device(0)
    problem = _load(problem_path, "launchrate_problem")
    solution = _load(solution_path, "launchrate_solution")
    torch.manual_seed(0)
    init = problem.get_init_inputs()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    model = solution.ModelNew(*init).to(device).eval()

    @triton.jit
    def one(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    cell = torch.zeros(1, device=device)
    forward = torch.no_grad()(lambda: model(*inputs))
    launch = lambda: one[(1,)](cell)
    add = lambda: cell.add_(1)
    compiled_forward = None
    if setting in COMPILED_IN:
        inductor_config.compile_threads = 1  # as the judge's baseline (speed._baseline)
        reference = problem.Model(*init).to(device).eval()
        compiled = torch.compile(reference)
        compiled_forward = torch.no_grad()(lambda: compiled(*inputs))
    for _ in range(3):  # compiles and warms every path before any setting
        forward()
        launch()
        add()
        if compiled_forward is not None:
            compiled_forward()
    torch.cuda.synchronize()

    if setting in ("witness", "runner"):  # a trial: forward under the runner's guards
        with torch.no_grad(), OpWitness(), LaunchMonitor(solution_path, OpRecorder()) as monitor, monitor.recorder:
            forward()
        torch.cuda.synchronize()
    if setting in ("profile", "profile_teardown", "runner"):  # the runner's own profile, before its timing
        from tritongym.evaluate.profiling import profile_forward

        with torch.no_grad():
            profile_forward(model, inputs, solution_path, device)
        time.sleep(1.5)
    hardening = None
    if setting in ("hardened", "runner"):
        from tritongym.evaluate.judge import landlock, seccomp
        from tritongym.evaluate.judge.runner import watchdog
        from tritongym.evaluate.judge.zygote import PR_SET_DUMPABLE, drop_capabilities, prctl

        directory = tempfile.mkdtemp(prefix="launchrate-")
        drop_capabilities()
        try:
            confined = landlock.confine_runner(directory, "cuda", True) is not None
        except OSError as exc:
            confined = f"not confined: {exc}"
        if seccomp.supported():
            seccomp.confine(os.getpid(), processes=False)
        watchdog(os.getppid(), [time.monotonic() + 600.0])
        prctl(PR_SET_DUMPABLE, 0)
        hardening = {"landlock": confined, "seccomp": seccomp.supported()}

    result = {
        "setting": setting,
        "device": torch.cuda.get_device_name(0),
        "hardening": hardening,
        "env": {k: os.environ.get(k) for k in ("CUDA_DEVICE_MAX_CONNECTIONS", "TEARDOWN_CUPTI")},
        "launchers": _launchers(solution),
        "static_cuda_launcher": getattr(inductor_config, "use_static_cuda_launcher", None),
        "solution": _timed(forward, 20),
        "triton": _timed(launch, 2000),
        "torch": _timed(add, 2000),
    }
    if compiled_forward is not None:
        result["compiled"] = _timed(compiled_forward, 20)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", required=True)
    parser.add_argument("--solution", required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--kb-level", help="The KernelBench level's directory: the real judge runs too.")
    parser.add_argument(
        "--pools", default="choice,8", help="The judge's pools: choice (its own queue choice) and/or a queue count."
    )
    parser.add_argument("--child", choices=SETTINGS, help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=90.0, help="Seconds per setting's process.")
    args = parser.parse_args()
    if args.child:
        print("LAUNCHRATE " + json.dumps(child(args.child, args.problem, args.solution)), flush=True)
        return
    import torch
    import triton

    report = {
        "device": "",
        "versions": {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "units": "seconds per call (median of 5 batches): host = enqueue time, wall = until finished, gpu = events",
        "results": [],
        "judge": [],
    }

    def save() -> None:  # after every row: what a cut-off call measured is kept
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))

    for setting in filter(None, args.settings.split(",")):
        env = dict(os.environ)
        env.pop("TEARDOWN_CUPTI", None)
        if setting in ("one_queue", "runner"):
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        if setting == "profile_teardown":
            env["TEARDOWN_CUPTI"] = "1"
        command = [sys.executable, __file__, "--child", setting, "--problem", args.problem, "--solution", args.solution]
        started = time.monotonic()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
            lines = [line for line in done.stdout.splitlines() if line.startswith("LAUNCHRATE ")]
            failed = {"setting": setting, "error": done.stderr[-2000:]}
            row = json.loads(lines[-1][len("LAUNCHRATE ") :]) if lines else failed
        except subprocess.TimeoutExpired:
            row = {"setting": setting, "error": f"timed out after {args.timeout} s"}
        row["seconds"] = round(time.monotonic() - started, 1)
        report["results"].append(row)
        report["device"] = report["device"] or row.get("device", "")
        save()
        kinds = [k for k in ("solution", "compiled", "triton", "torch") if k in row]
        brief = {k: {m: round(v * 1e6, 2) for m, v in row[k].items()} for k in kinds}
        print(setting, json.dumps(brief) if brief else row.get("error", "")[-600:], flush=True)
    if args.kb_level:
        judged(args.kb_level, Path(args.problem).stem, args.solution, report["judge"], save, args.pools)


if __name__ == "__main__":
    main()
