"""Host cost of kernel launches: a plain process against a runner's settings, and inside a real runner.

Why do forwards with many launches read slow in the Inductor A/A test (34_VanillaRNNHidden 0.111-0.154)?
Either (a) the standalone solution's launch path is slower than torch.compile's, or (b) a runner
launches the same code more slowly than an ordinary process. Each setting runs in a fresh process
(``--child``) that loads the problem and its standalone solution, warms both up, applies the
setting, then times on the host (no synchronisation inside a loop) and on the GPU (events):

* ``solution``: the standalone solution's forward (Inductor's code, its kernels' launchers);
* ``compiled``: torch.compile of the reference, as the judge's ``--baseline compile`` makes it (plain only);
* ``triton``: a one-element ``@triton.jit`` kernel launched through ``JITFunction.run``;
* ``torch``: a one-element ``add_`` (PyTorch's own launch path);
* ``probe`` (``PROBES``): Python's own speed (a trivial function's calls), and the forward's and the
  add's host and finishing rates free and queued behind a 50 ms hold (past the stream's queue, as in
  a late timing bracket, the host waits for the GPU at every launch), and what is installed that could
  run at every call (profile and trace hooks, threads, dispatch and function modes, the profiler).

Settings: ``plain``; ``one_queue`` (``CUDA_DEVICE_MAX_CONNECTIONS=1``, what the judge gives the
runner of a single-stream reference); ``scaled_queue`` (``CUDA_SCALE_LAUNCH_QUEUES=4x``, what every GPU judge
and runner gets: ``PoolConfig.launch_queue_scale``); ``witness`` (one forward under the runner's guards first:
OpWitness, LaunchMonitor, OpRecorder, as a trial); ``profile`` (the runner's own profile of a forward
first, ``profile_forward``; ``profile_teardown`` the same with ``TEARDOWN_CUPTI=1``: a runner profiles
after its timing, so neither is in ``runner``); ``seccomp`` (the runner's seccomp filter alone, after
no_new_privs); ``hardened`` (the runner's hardening after warming up: capabilities dropped, Landlock,
seccomp, the watchdog thread); ``forked`` (measured in a child forked before CUDA exists, as a runner
is from its zygote); ``runner`` (the trial, the hardening and the fork, one queue, the scaled queue). Every child also
reports its ``Speculation_*`` and ``Seccomp`` lines of ``/proc/self/status``.

``--judge PROBLEM.py:SOLUTION.py:BASELINE`` (repeatable; ``many:STEPS`` for ``write_many_ops``'s
problem and solution, against eager) runs the real judge next, in a LocalEnv pool of one judge per
``--pools`` entry (``choice``: the judge's choice of work queues, one for a single-stream reference;
a count: every runner gets it; ``/off`` after either: the driver's launch queue, not the pool's
scaled one), on the solution with ``INSTRUMENT`` appended: it reports its host
time of every call and, at the timing's first batch, the probes, on stderr, which the result carries.
Its speedup is the judge's reading of the solution (two clock reads and a line a call added; the
probes in an untimed batch).

Cost (H200, session 11, 34_VanillaRNNHidden at full size): its solution has 258 distinct Triton
kernels; generating it took 54 s, and each judge evaluation 84-155 s. ``bash benchmarks/gpu_run.sh
launchrate`` measures a copy with ``sequence_length`` 64 (66 kernels) and ``write_many_ops``'s problems.

    python benchmarks/launch_rate.py --problem short/34_VanillaRNNHidden.py \\
        --solution OUT/solutions/34_VanillaRNNHidden.py --out OUT/launch_rate.json \\
        --judge short/34_VanillaRNNHidden.py:OUT/solutions/34_VanillaRNNHidden.py:compile --judge many:600
"""

from __future__ import annotations

import argparse
import ast
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

from tritongym.evaluate.judge.work_queues import LAUNCH_QUEUE_SCALE, LAUNCH_QUEUE_SCALE_ENV

SETTINGS = (
    "plain",
    "one_queue",
    "scaled_queue",
    "witness",
    "profile",
    "profile_teardown",
    "seccomp",
    "hardened",
    "forked",
    "runner",
)
COMPILED_IN = ("plain",)
"""Settings whose child also times torch.compile of the reference (its compile costs 10-20 s)."""
FORKED_IN = ("forked", "runner")
"""Settings measured in a child forked before CUDA exists, as a runner is forked from its zygote."""

PROBES = '''
import sys as _launchrate_sys
import time as _launchrate_time

import torch as _launchrate_torch


def _launchrate_python(n=100000):
    """Seconds per call of a trivial Python function, the best of five loops: the host's speed at
    plain Python (a process-wide mitigation, such as the store-bypass one a seccomp filter may turn
    on, slows it)."""

    def step(x):
        return x + 1

    best = 1.0
    for _ in range(5):
        x = 0
        begun = _launchrate_time.perf_counter()
        for _ in range(n):
            x = step(x)
        best = min(best, (_launchrate_time.perf_counter() - begun) / n)
    return best


def _launchrate_sleep_rate():
    """Cycles per second of torch.cuda._sleep, by the host's clock."""
    cuda = _launchrate_torch.cuda
    cuda.synchronize()
    begun = _launchrate_time.perf_counter()
    cuda._sleep(50000000)
    cuda.synchronize()
    return 50000000 / (_launchrate_time.perf_counter() - begun)


def _launchrate_calls(fn, count, hold_s=0.0, rate=0.0):
    """``count`` calls of ``fn``: microseconds per call the host took to queue them, and per call until
    the GPU finished them (less the hold). With ``hold_s`` they queue behind a sleep kernel, as a
    timing bracket's do: past the stream's queue the host waits for the GPU at every launch."""
    cuda = _launchrate_torch.cuda
    cuda.synchronize()
    begun = _launchrate_time.perf_counter()
    if hold_s:
        cuda._sleep(int(hold_s * rate))
    for _ in range(count):
        fn()
    queued = _launchrate_time.perf_counter()
    cuda.synchronize()
    done = _launchrate_time.perf_counter()
    return {"host_us": round((queued - begun) / count * 1e6, 2),
            "done_us": round((done - begun - hold_s) / count * 1e6, 2)}


def _launchrate_queue(fn, rate, limit=8000):
    """Calls of ``fn`` queued behind a 0.2 s hold before one blocked the host for a millisecond: the
    stream's queue was full (its capacity, in such calls); ``limit`` where none blocked."""
    cuda = _launchrate_torch.cuda
    cuda.synchronize()
    cuda._sleep(int(0.2 * rate))
    queued = limit
    for k in range(limit):
        begun = _launchrate_time.perf_counter()
        fn()
        if _launchrate_time.perf_counter() - begun > 0.001:
            queued = k
            break
    cuda.synchronize()
    return queued


def _launchrate_probe(forward, count):
    """Python's speed and what is installed that could run at every call; on a GPU, ``forward``'s and
    a one-element add's rates, free and behind a 50 ms hold."""
    found = {"python_ns": round(_launchrate_python() * 1e9, 2),
             "threads": len(_launchrate_sys._current_frames()),
             "profile_hook": repr(_launchrate_sys.getprofile()), "trace_hook": repr(_launchrate_sys.gettrace()),
             "profiler_enabled": _launchrate_torch.autograd._profiler_enabled()}
    native = getattr(_launchrate_torch, "_C")
    for name in ("_len_torch_dispatch_stack", "_len_torch_function_stack"):
        found[name] = getattr(native, name)() if hasattr(native, name) else None
    if not _launchrate_torch.cuda.is_available():
        return found
    rate = _launchrate_sleep_rate()
    cell = _launchrate_torch.zeros(1, device="cuda")
    add = lambda: cell.add_(1)
    forward()
    found["forward_free"] = _launchrate_calls(forward, count)
    found["forward_held"] = _launchrate_calls(forward, count, 0.05, rate)
    found["add_free"] = _launchrate_calls(add, 3000)
    found["add_held"] = _launchrate_calls(add, 3000, 0.05, rate)
    found["add_queue"] = _launchrate_queue(add, rate)
    return found
'''
"""The probes: the same code in a setting's process and in the instrumented solution (a runner)."""

PROBE_FORWARDS = 8
"""Forwards per probe: 8 of the shortened VanillaRNN (264 operations each) are past a stream's queue."""

INSTRUMENT = (
    PROBES
    + '''
from triton.runtime.jit import JITFunction as _LaunchrateJIT

_launchrate_module = locals()


class _LaunchRate(ModelNew):
    """ModelNew reporting its own forward's host time (from its call to its return, nothing
    synchronised) on stderr at every call, and the probes at its first call outside the runner's
    guards (the timing's first batch), before that call's forward."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._launchrate = [0, 0.0, False]

    def forward(self, *args):
        calls, returned, probed = self._launchrate
        guarded = _LaunchrateJIT.run.__qualname__ != "JITFunction.run"
        if not guarded and not probed:
            found = _launchrate_probe(lambda: super(_LaunchRate, self).forward(*args), PROBE_FORWARDS)
            found["launchers"] = sorted({type(launcher).__qualname__ for value in list(_launchrate_module.values())
                                         for launcher in (getattr(value, "launchers", None) or [])})
            print("LAUNCHRATE probe " + repr(found), file=_launchrate_sys.stderr, flush=True)
            probed = True
        begun = _launchrate_time.perf_counter()
        out = super().forward(*args)
        ended = _launchrate_time.perf_counter()
        gap = (begun - returned) * 1e6 if calls else -1
        print(f"LAUNCHRATE call {calls + 1} {(ended - begun) * 1e6:.0f} {gap:.0f} {int(guarded)}",
              file=_launchrate_sys.stderr, flush=True)
        self._launchrate = [calls + 1, ended, probed]
        return out


ModelNew = _LaunchRate
'''.replace("PROBE_FORWARDS", str(PROBE_FORWARDS))
)
"""Appended to a solution: ``ModelNew`` reporting on stderr (the result carries the runner's stderr)
one line a call, ``LAUNCHRATE call <n> <host us> <us since the last call returned> <guarded>``
(guarded: a trial, the hollow or fallback forward, the profile: Triton's ``JITFunction.run`` is
then the runner's launch monitor's wrapper), and the probes once (``LAUNCHRATE probe {...}``) at
the first unguarded call, before its forward: the timing's first (untimed) batch."""

LATER_GAP_US = 2000
"""A call begun within this long of the last one's return is a timing batch's later call (the host
may have waited there for the GPU: the stream's queue full)."""


def runner_report(stderr: str) -> dict:
    """What the instrumented solution said on stderr: the probes, and its unguarded calls' host time
    (ms, medians) for a batch's first call (the queue empty before it) and for its later ones."""
    probe, first, later, guarded = None, [], [], 0
    for line in stderr.splitlines():
        if line.startswith("LAUNCHRATE probe "):
            probe = ast.literal_eval(line[len("LAUNCHRATE probe ") :])
        elif line.startswith("LAUNCHRATE call "):
            host, gap, was_guarded = line.split()[3:6]
            if was_guarded == "1":
                guarded += 1
            elif 0 <= float(gap) <= LATER_GAP_US:
                later.append(float(host) / 1e3)
            else:
                first.append(float(host) / 1e3)
    median = lambda xs: round(statistics.median(xs), 3) if xs else None
    return {"probe": probe, "guarded_calls": guarded, "first_calls": len(first), "later_calls": len(later),
            "first_ms": median(first), "later_ms": median(later)}  # fmt: skip


MANY_OPS_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """STEPS steps of two one-launch elementwise ops on a small tensor: a forward of 2 * STEPS launches,
    each a few microseconds of GPU work (its host's launches bound it)."""

    def forward(self, x):
        for _ in range(STEPS):
            x = x * 0.999 + 0.001
        return x


def get_inputs():
    return [torch.rand(4096)]


def get_init_inputs():
    return []
'''

MANY_OPS_SOLUTION = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    """The reference's PyTorch ops, launched as the judge launches them, and one Triton copy of the
    result: an A/A of the two processes' PyTorch launches (judged with torch_compute allowed)."""

    def forward(self, x):
        for _ in range(STEPS):
            x = x * 0.999 + 0.001
        out = torch.empty_like(x)
        _copy[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


def write_many_ops(directory: Path, steps: int) -> tuple[Path, Path]:
    """A problem of ``steps`` steps of two PyTorch ops each (``2 * steps`` launches a forward, past a
    stream's queue from about 512 steps) and its solution, which launches the same ops and one Triton
    copy; returns their paths."""
    name = f"{steps}_ManyTinyOps.py"
    problem, solution = directory / "problems" / name, directory / "solutions" / name
    for path, text in ((problem, MANY_OPS_PROBLEM), (solution, MANY_OPS_SOLUTION)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("STEPS", str(steps)))
    return problem, solution


def pool_settings(entry: str):
    """The pool of one ``--pools`` entry: ``choice`` (the judge's choice of work queues) or a count every
    runner gets, with ``/off`` for the driver's launch queue instead of the pool's scaled one."""
    from tritongym.env import PoolConfig

    count, _, scaled = entry.partition("/")
    if scaled not in ("", "off"):
        raise ValueError(f"a pool is choice or a queue count, then /off or nothing, not {entry!r}")
    queues = None if count == "choice" else int(count)
    scale = None if scaled == "off" else LAUNCH_QUEUE_SCALE
    return PoolConfig(devices="cuda:0", sandboxes_per_device=1, runner_work_queues=queues, launch_queue_scale=scale)


def judged(specs: list[str], rows: list, save, pools: str, scratch: Path) -> None:
    """The real judge on each spec's instrumented solution (``PROBLEM.py:SOLUTION.py:BASELINE``, or
    ``many:STEPS`` against eager) in each pool of ``pools``: ``choice`` (the judge's choice of work
    queues: one for a single-stream reference) or a count every runner gets (8: the driver's default)."""
    from tritongym.env import LocalEnv, Task
    from tritongym.evaluate import EvalConfig
    from tritongym.problems import load_problems

    tasks = []
    for spec in specs:
        if spec.startswith("many:"):
            problem_path, solution_path = write_many_ops(scratch, int(spec.split(":")[1]))
            baseline = "eager"
        else:
            problem_path, solution_path, baseline = spec.rsplit(":", 2)
        problem = load_problems(problem_path)[0].prepare()
        source = Path(solution_path).read_text().rstrip() + "\n" + INSTRUMENT
        config = EvalConfig(device="cuda", baseline=baseline, timing_budget_s=2.0, max_source_bytes=1 << 22,
                            output_limit_bytes=1 << 20, torch_compute="allow")  # fmt: skip
        tasks.append((problem, source, config))
    for pool in filter(None, pools.split(",")):
        pool_config = pool_settings(pool)
        queues, scale = pool_config.runner_work_queues, pool_config.launch_queue_scale
        with LocalEnv(pool_config) as env:
            for problem, source, config in tasks:
                started = time.monotonic()
                result = env.evaluate_batch([Task(problem, source, problem.name)], config)[0]
                timing = result.timing
                row = {
                    "problem": problem.name,
                    "baseline": config.baseline,
                    "runner_work_queues": queues or "judge's choice",
                    "launch_queue_scale": scale,
                    "verdict": str(result.verdict),
                    "speedup": result.speedup,
                    "reference_ms": timing and timing.reference_ms,
                    "candidate_ms": timing and timing.candidate_ms,
                    "late_brackets": timing and timing.late_brackets,
                    "late_by": timing and timing.late_by,
                    "reps": timing and timing.reps,
                    "runner": runner_report(result.stderr),
                    "feedback": result.feedback[:1500],
                    "stages": result.stage_seconds,
                    "seconds": round(time.monotonic() - started, 1),
                }
                rows.append(row)
                save()
                print(json.dumps({k: v for k, v in row.items() if k not in ("stages", "feedback")}), flush=True)


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


def status_lines() -> dict[str, str]:
    """This process's speculation mitigations and seccomp mode (``/proc/self/status``)."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError as exc:
        return {"error": str(exc)}
    return dict(line.split(":\t", 1) for line in lines if line.startswith(("Speculation", "Seccomp")))


def forked() -> None:
    """Go on in a child forked now (before CUDA exists), the parent waiting for it and exiting with its
    status, as a runner is forked from its zygote (its heap frozen first: zygote.settle_heap)."""
    import gc

    gc.collect()
    gc.freeze()
    pid = os.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status))


def child(setting: str, problem_path: str, solution_path: str) -> dict:
    import torch
    import torch._inductor.config as inductor_config
    import triton
    import triton.language as tl

    from tritongym.evaluate.guards import LaunchMonitor, OpRecorder, OpWitness

    if setting in FORKED_IN:  # before the solution's import, which initialises CUDA (Inductor's kernels
        forked()  # read the device's properties), as a runner imports its candidate after the fork
    problem = _load(problem_path, "launchrate_problem")
    solution = _load(solution_path, "launchrate_solution")
    device = torch.device("cuda")
    torch.cuda.set_device(0)
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
    if setting in ("profile", "profile_teardown"):  # the runner's own profile (after its timing)
        from tritongym.evaluate.profiling import profile_forward

        with torch.no_grad():
            profile_forward(model, inputs, solution_path, device)
        time.sleep(1.5)
    hardening = None
    if setting == "seccomp":
        from tritongym.evaluate.judge import seccomp
        from tritongym.evaluate.judge.zygote import PR_SET_NO_NEW_PRIVS, prctl

        prctl(PR_SET_NO_NEW_PRIVS, 1)
        seccomp.confine(os.getpid(), processes=False)
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

    probes: dict = {}
    exec(compile(PROBES, "<launch_rate probes>", "exec"), probes)
    result = {
        "setting": setting,
        "device": torch.cuda.get_device_name(0),
        "hardening": hardening,
        "status": status_lines(),
        "env": {
            k: os.environ.get(k) for k in ("CUDA_DEVICE_MAX_CONNECTIONS", "TEARDOWN_CUPTI", LAUNCH_QUEUE_SCALE_ENV)
        },
        "launchers": _launchers(solution),
        "static_cuda_launcher": getattr(inductor_config, "use_static_cuda_launcher", None),
        "probe": probes["_launchrate_probe"](forward, PROBE_FORWARDS),
        "solution": _timed(forward, 20),
        "triton": _timed(launch, 2000),
        "torch": _timed(add, 2000),
    }
    if compiled_forward is not None:
        result["compiled"] = _timed(compiled_forward, 20)
        result["compiled_probe"] = probes["_launchrate_probe"](compiled_forward, PROBE_FORWARDS)
    if setting == "plain":  # the operations a forward queues, as a trial counts them
        with torch.no_grad(), LaunchMonitor(solution_path, OpRecorder()) as monitor, monitor.recorder:
            forward()
        result["ops_per_forward"] = (
            monitor.launches + sum(monitor.foreign.values()) + sum(monitor.recorder.compute.values())
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", help="The problem of the settings' processes.")
    parser.add_argument("--solution", help="Its standalone solution.")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument(
        "--judge", action="append", default=[],
        help="PROBLEM.py:SOLUTION.py:BASELINE, or many:STEPS: judged (instrumented) after the settings.",
    )  # fmt: skip
    parser.add_argument(
        "--pools",
        default="choice,8",
        help="The judge's pools: choice (its own queue choice) or a queue count, each with /off for the driver's "
        "launch queue.",
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
        "kernel": platform.release(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "units": "seconds per call (median of 5 batches): host = enqueue time, wall = until finished, gpu = events; "
        "probe: microseconds per call (host_us to queue, done_us until finished, less any hold), python_ns",
        "results": [],
        "judge": [],
    }

    def save() -> None:  # after every row: what a cut-off call measured is kept
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))

    settings = [s for s in args.settings.split(",") if s] if args.problem else []
    for setting in settings:
        env = dict(os.environ)
        env.pop("TEARDOWN_CUPTI", None)
        env.pop(LAUNCH_QUEUE_SCALE_ENV, None)
        if setting in ("one_queue", "runner"):
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        if setting in ("scaled_queue", "runner"):
            env[LAUNCH_QUEUE_SCALE_ENV] = LAUNCH_QUEUE_SCALE
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
        brief["probe"] = row.get("probe")
        print(setting, json.dumps(brief) if kinds else row.get("error", "")[-600:], flush=True)
    if args.judge:
        with tempfile.TemporaryDirectory(prefix="launchrate-") as scratch:
            judged(args.judge, report["judge"], save, args.pools, Path(scratch))


if __name__ == "__main__":
    main()
