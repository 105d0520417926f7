"""The seventh red team's breaks (tests/adversarial/redteam7/README.md). Each test asserts the safe
behaviour; those of breaks still open are marked xfail(strict=True) and flip when fixed."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritongym.evaluate.judge import seccomp

HERE = Path(__file__).parent / "redteam7"
ROOT = Path(__file__).parents[2]

DECOYS = """
import triton
import triton.language as tl


@triton.jit
def honest(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def calls_honest(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    honest(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def by_cache(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def by_instance(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def by_rewriter(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def by_subclass(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def calls_helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    helper(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def by_linecache(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
"""

BORROWED = """
import triton
import triton.language as tl


@triton.jit
def borrowed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
"""

SWAP_PROBE = """
import json, linecache, runpy, sys
import torch
from tritongym.evaluate.guards import CandidateText, LaunchMonitor

path, other = sys.argv[1], sys.argv[2]
text = CandidateText.read(path)
module = runpy.run_path(path)
borrowed = runpy.run_path(other)["borrowed"]
x = torch.arange(32, dtype=torch.float32)


def launch(kernel):
    out = torch.zeros_like(x)
    try:
        with LaunchMonitor(path, text=text) as monitor:
            kernel[(2,)](x, out, 32, BLOCK=16)
    except Exception as exc:  # Triton's frontend refused the kernel at its launch, as a GPU's compile would
        return f"refused: {type(exc).__name__}"
    factor = float(out[1] / x[1])
    return {"own": monitor.launches, "foreign": sum(monitor.foreign.values()), "factor": factor}


seen = {}
# first, before any launch reads the text's source: the decoy's lines in linecache become another's
kernel = module["by_linecache"]
lines = linecache.getlines(path)
start = kernel.fn.__code__.co_firstlineno - 1
stolen = linecache.getlines(other)
stolen = stolen[next(i for i, line in enumerate(stolen) if line.startswith("@triton.jit")):]
stolen[1] = stolen[1].replace("borrowed", "by_linecache")
linecache.cache[path] = (0, None, lines[:start] + stolen, path)
seen["linecache"] = launch(kernel)
linecache.cache[path] = (0, None, lines, path)
seen |= {"honest": launch(module["honest"]), "calls honest": launch(module["calls_honest"])}
kernel = module["by_cache"]
kernel.rewritten_fn[kernel.fn] = borrowed.rewrite()
seen["class cache"] = launch(kernel)
kernel = module["by_instance"]
kernel.rewrite = borrowed.rewrite
seen["instance rewrite"] = launch(kernel)
kernel = module["by_rewriter"]
kernel.rewriter = type(kernel.rewriter)(borrowed.fn)
seen["rewriter"] = launch(kernel)
kernel = module["by_subclass"]


class Sneaky(type(kernel)):
    def rewrite(self):
        return borrowed.rewrite()


seen["subclass"] = launch(Sneaky(kernel.fn))
helper = module["helper"]
helper.rewritten_fn[helper.fn] = borrowed.rewrite()
seen["helper's cache"] = launch(module["calls_helper"])
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def swaps(tmp_path_factory) -> dict:
    """SWAP_PROBE's launches, once for the module (in a process of its own: Triton's interpreter is
    chosen when Triton is imported)."""
    directory = tmp_path_factory.mktemp("swaps")
    path, other = directory / "solution.py", directory / "other.py"
    path.write_text(DECOYS)
    other.write_text(BORROWED)
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SWAP_PROBE, str(path), str(other)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_interpreter_runs_only_the_source_that_was_checked(swaps):
    """#1: under the interpreter a launch runs ``kernel.rewrite()``, which the candidate controls (the
    class's cache of rewritten functions, an instance's ``rewrite`` or ``rewriter``, a subclass,
    ``linecache``); a JIT function called from a kernel likewise. Each route made an empty decoy of
    the text run another file's kernel (x2) as the candidate's own launch. Now the decoy's own
    (empty) source runs, or the launch is not the candidate's own."""
    assert swaps["honest"] == {"own": 1, "foreign": 0, "factor": 3.0}, swaps
    assert swaps["calls honest"] == {"own": 1, "foreign": 0, "factor": 3.0}, swaps
    for route in ("class cache", "instance rewrite", "rewriter", "subclass", "helper's cache", "linecache"):
        seen = swaps[route]
        assert isinstance(seen, str) or not (seen["own"] and seen["factor"] == 2.0), (route, swaps)


@pytest.mark.parametrize(
    "name, verdict",
    [("swaps_what_the_interpreter_runs.py", "mismatch"), ("swaps_its_kernels_function.py", "runtime_error")],
)
def test_a_kernel_that_runs_another_function_than_its_text_gains_nothing(warm_env, name, verdict):
    """#1 end to end (softmax, static checks on, torch_compute="forbid"): the bundled solution's
    kernel put in the interpreter's cache under an empty decoy's function, and a decoy whose ``fn``
    and ``rewriter`` become a NumPy function after its first launch, were both `ok`. Now the decoy's
    own source runs (an unwritten output: `mismatch`), and the NumPy function meets Triton's frontend
    (`runtime_error`, as a GPU's compile)."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / name).read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, torch_compute="forbid")
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict.value == verdict, result.feedback


def test_a_kernel_object_of_a_subclass_is_not_the_candidates(tmp_path):
    """#1d, the GPU's form (test_redteam7_gpu.py): Triton compiles ``fn.parse()``, a method a subclass
    of JITFunction may override to return another kernel's AST, while its ``fn`` and ``src`` stay the
    text's. A kernel or callee object whose class is not Triton's own is not the candidate's; the same
    function in Triton's own class is."""
    from triton.runtime.jit import JITFunction

    from tritongym.evaluate.guards import CandidateText, LaunchMonitor

    path = tmp_path / "solution.py"
    path.write_text("def kernel(x_ptr, n):\n    pass\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec", dont_inherit=True), namespace)

    class Borrowing(JITFunction):
        def parse(self):
            raise AssertionError("never compiled here")

    monitor = LaunchMonitor(str(path), text=CandidateText.read(str(path)))
    assert monitor._own(JITFunction(namespace["kernel"]))
    assert not monitor._own(Borrowing(namespace["kernel"]))
    assert not monitor._arguments_own((Borrowing(namespace["kernel"]),), {})


CPU_PROBE = """
import os
import resource
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
print(f"CPU LIMIT {soft} {hard} USED {time.process_time():.2f}")


def attempt(call):
    try:
        call()
    except OSError as exc:
        return exc.errno
    return 0


widen = attempt(lambda: os.sched_setaffinity(0, range(os.cpu_count())))
nice = attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, 10))
print(f"CORES {len(os.sched_getaffinity(0))} WIDEN {widen} NICE {nice}")


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
"""

CPU_SPENDER = """
import resource
import time

import torch.nn as nn
import triton

soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
resource.setrlimit(resource.RLIMIT_CPU, (int(time.process_time()) + 1, hard))  # lowering needs no privilege
while True:
    pass


@triton.jit
def kernel(x_ptr):
    pass


ModelNew = nn.Identity
"""


def test_a_runners_cpu_time_is_bounded_by_its_deadline(warm_env):
    """#2: nothing bounded a runner's CPU time: `hogs_every_core_at_import.py` spins threads at import
    (taking every core of the host from the concurrent evaluations of its group) and joins them
    before forward, then passes (`ok`). Now a runner may use at most RUNNER_CPU_CORES cores' worth of
    CPU time over its lifetime (RLIMIT_CPU, set when its job is loaded), and a CPU runner runs on at
    most that many cores (its affinity, which it cannot change)."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig
    from tritongym.evaluate.judge.runner import RUNNER_CPU_CORES

    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, timeout_s=20.0)
    result = warm_env.submit(small_problem("vector_add"), CPU_PROBE, config).result()
    assert result.verdict.value == "ok", result.feedback
    line = next(line for line in result.stdout.splitlines() if line.startswith("CPU LIMIT"))
    soft, hard, used = int(line.split()[2]), int(line.split()[3]), float(line.split()[5])
    # the lifetime: the job's deadline, 30 s of grace, and (a shrunk problem on the CPU) as much again
    # for the second size's trial, whose allowance moves the deadline (honest4: SecondSize.allowance)
    lifetime = config.timeout_s + 30 + config.timeout_s
    assert 0 < soft <= used + RUNNER_CPU_CORES * lifetime + 1, line
    assert soft < hard != -1, line
    # its burst over cores too (the open item): a CPU runner runs on RUNNER_CPU_CORES cores at most, and
    # under the seccomp filter may change no scheduling, its own included
    cores = next(line for line in result.stdout.splitlines() if line.startswith("CORES")).split()
    assert 0 < int(cores[1]) <= RUNNER_CPU_CORES, cores
    if seccomp.supported():
        assert int(cores[3]) == int(cores[5]) == errno.EPERM, cores


def test_a_runners_cores_are_a_window_of_the_pools_that_runners_spread_over():
    """The open item of #2 (a burst over every core within the CPU-time budget): a CPU runner is
    pinned to RUNNER_CPU_CORES consecutive cores of those allowed, the window placed by its pid."""
    from tritongym.evaluate.judge.runner import runner_cores

    allowed = {0, 2, 4, 6, 8, 10, 12, 14}
    assert runner_cores(allowed, 0, 2) == {0, 2} and runner_cores(allowed, 3, 2) == {6, 8}
    assert runner_cores(allowed, 7, 2) == {14, 0}, "the window wraps"
    assert runner_cores({1, 3}, 12345, 2) == {1, 3} and runner_cores({5}, 9, 2) == {5}
    assert len({frozenset(runner_cores(set(range(64)), pid, 2)) for pid in range(1000, 1032)}) == 32


PINNED = """
import json, os, threading, time
from tritongym.evaluate.judge.runner import confine_cores

started = threading.Event()
threading.Thread(target=lambda: (started.set(), time.sleep(5)), daemon=True).start()
started.wait()
cores = confine_cores(1)
later = []
threading.Thread(target=lambda: later.append(sorted(os.sched_getaffinity(0)))).start()
time.sleep(0.2)
tasks = {t: sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
print(json.dumps({"cores": sorted(cores), "tasks": list(tasks.values()), "later": later}))
"""


def test_confining_cores_pins_every_thread_and_those_started_later():
    """``confine_cores`` sets every thread's affinity (a thread started before it included: the
    affinity call is per thread), and threads started after inherit it."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PINNED], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert len(seen["cores"]) == 1 and len(seen["tasks"]) >= 2, seen
    assert all(mask == seen["cores"] for mask in [*seen["tasks"], *seen["later"]]), seen


def test_a_runner_past_its_cpu_time_is_told_so(warm_env):
    """#2: a runner the kernel stops at its CPU-time limit (SIGXCPU) gets a crash that says why."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, timeout_s=20.0)
    result = warm_env.submit(small_problem("vector_add"), CPU_SPENDER, config).result()
    assert result.verdict.value == "crash", result.feedback
    assert "SIGXCPU" in result.feedback and "CPU time" in result.feedback, result.feedback


AFTER_CHECK = """
import numpy as np
import triton
import triton.language as tl

STASH = []


@triton.jit
def helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def calls_helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    helper(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def forged_helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    helper(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def calls_forged(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    forged_helper(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def calls_given(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BODY: tl.constexpr):
    BODY(x_ptr, out_ptr, n, BLOCK)


def host(x_ptr, out_ptr, n, BLOCK):
    np.multiply(STASH[0].numpy(), 2.0, out=STASH[1].numpy())


class Lookalike:
    def __repr__(self):
        return repr(helper)

    def __call__(self, *args):
        host(*args)


FORGED = "def forged(x_ptr, out_ptr, n, BLOCK):\\n    np.multiply(STASH[0].numpy(), 2.0, out=STASH[1].numpy())\\n"
"""

AFTER_CHECK_PROBE = """
import json, linecache, runpy, sys
import torch
import triton.language.standard as standard
from tritongym.evaluate.guards import CandidateText, LaunchMonitor

path = sys.argv[1]
text = CandidateText.read(path)
module = runpy.run_path(path)
x = torch.arange(32, dtype=torch.float32)


def launch(kernel, **meta):
    out = torch.zeros_like(x)
    module["STASH"][:] = [x, out]
    try:
        with LaunchMonitor(path, text=text) as monitor:
            kernel[(2,)](x, out, 32, BLOCK=16, **meta)
    except Exception as exc:  # Triton's frontend refused the kernel, or what changed since it checked it
        return f"refused: {type(exc).__name__}"
    return {"own": monitor.launches, "foreign": sum(monitor.foreign.values()), "factor": float(out[1] / x[1])}


seen = {"helper": launch(module["calls_helper"]), "given": launch(module["calls_given"], BODY=module["helper"])}
seen["lookalike given"] = launch(module["calls_given"], BODY=module["Lookalike"]())
seen["function given"] = launch(module["calls_given"], BODY=module["host"])
seen["forged before"] = launch(module["calls_forged"])
module["helper"].fn = module["host"]  # after the frontend accepted calls_helper and calls_given
seen["helper swapped"] = launch(module["calls_helper"])
seen["given swapped"] = launch(module["calls_given"], BODY=module["helper"])
# a function compiled under the file name of Triton's own module, its lines there replaced
lines = linecache.getlines(standard.__file__)
where = len(lines) + 1
scope = {"np": module["np"], "STASH": module["STASH"]}
exec(compile("\\n" * (where - 1) + module["FORGED"], standard.__file__, "exec"), scope)
linecache.cache[standard.__file__] = (0, None, lines + module["FORGED"].splitlines(True), standard.__file__)
module["forged_helper"].fn = scope["forged"]
seen["forged library"] = launch(module["calls_forged"])
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def after_check(tmp_path_factory) -> dict:
    """AFTER_CHECK_PROBE's launches, once for the module, in a process of its own."""
    path = tmp_path_factory.mktemp("after") / "solution.py"
    path.write_text(AFTER_CHECK)
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", AFTER_CHECK_PROBE, str(path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_what_changes_after_the_frontend_checked_a_kernel_is_checked_again(after_check):
    """#3: the frontend remembered an accepted specialization by its ``repr``, which a constexpr's value
    chooses (an object of the candidate's class whose ``repr`` is an accepted JIT function's: its
    ``__call__`` then ran NumPy inside an own launch; Triton's code generator calls such an object while
    it compiles, so the frontend let it through anyway, as it did a plain Python function passed), and
    a JIT function the kernel calls (a global,
    or a constexpr) given another ``fn`` after the check ran that function unchecked; so did one
    compiled under the file name of Triton's own module. Now each such launch is refused (as Triton's
    frontend or a GPU's check of changed globals refuses) or is not the candidate's own."""
    seen = after_check
    assert seen["helper"] == seen["given"] == seen["forged before"] == {"own": 1, "foreign": 0, "factor": 3.0}, seen
    for route in ("lookalike given", "function given", "helper swapped", "given swapped", "forged library"):
        result = seen[route]
        assert isinstance(result, str) or not (result["own"] and result["factor"] == 2.0), (route, seen)


def test_a_lookalike_constexpr_does_not_pass_for_a_checked_one(warm_env):
    """#3 end to end (softmax, forbid): `passes_a_lookalike_constexpr.py` was `ok`; now a launch
    passed an object with a ``__call__`` is not the candidate's own: a hack verdict."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "passes_a_lookalike_constexpr.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, torch_compute="forbid")
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict.category.value == "hack", result.feedback


def test_a_pre_run_hook_of_the_candidates_is_not_its_kernels_work(warm_env):
    """#4: `computes_in_a_pre_run_hook.py` registered a NumPy softmax as a pre-run hook of its empty
    kernel (Triton runs hooks inside the launch): `ok`. Now a kernel with a hook that is not a
    library's is not the candidate's own: `hack_no_triton`."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "computes_in_a_pre_run_hook.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, torch_compute="forbid")
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict.category.value == "hack", result.feedback


def test_space_held_in_the_runners_directory_counts_as_its_memory(warm_env):
    """#5: `fills_its_directory.py` reserved 1200 MiB in six files of its directory (``posix_fallocate``)
    with a 1024 MiB limit and passed: nothing measured them (RAM where the home is a tmpfs, else disk
    the concurrent jobs need). Now the files of a runner's directory count as its memory."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "fills_its_directory.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, memory_limit_mb=1024)
    result = warm_env.submit(small_problem("vector_add"), source, config).result()
    assert result.verdict.value == "out_of_memory", result.feedback


def test_a_directory_of_more_entries_than_the_measure_reads_is_over_any_limit(tmp_path):
    """#5: the measure reads at most MAX_DIRECTORY_ENTRIES entries of a runner's directory; a directory
    with more (files hidden beyond what is read) is over every limit rather than partly counted."""
    from tritongym.evaluate.judge.runners import MAX_DIRECTORY_ENTRIES, directory_bytes

    (tmp_path / "a").write_bytes(b"x" * 100_000)
    (tmp_path / "a-link").hardlink_to(tmp_path / "a")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 50_000)
    held = directory_bytes(str(tmp_path))
    assert 150_000 <= held < 200_000, held  # the hard link counted once
    for i in range(MAX_DIRECTORY_ENTRIES):
        (tmp_path / f"e{i}").touch()
    assert directory_bytes(str(tmp_path)) >= 1 << 62


def test_a_plain_function_a_kernel_reaches_is_not_its_kernels_work(warm_env):
    """#6: `rebinds_a_global_to_host_code.py` rebound the global its kernel calls, after the first
    launch, from an empty JIT function to a plain NumPy function of its text: `ok`. Now a plain Python
    function that a kernel reaches (a GPU's compiler refuses one) makes its launches foreign."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig

    source = (HERE / "rebinds_a_global_to_host_code.py").read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0, torch_compute="forbid")
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict.category.value == "hack", result.feedback


REBOUND = """
import numpy as np
import triton
import triton.language as tl
import triton.language as language  # the interpreter asks for triton.language among a kernel's globals

STASH = []


def host(*args):
    np.multiply(STASH[0].numpy(), 2.0, out=STASH[1].numpy())


class Everything:
    def __getattr__(self, name):
        return lambda *args, **kwargs: host() or 0


class Doubler:
    def __call__(self, *args):
        host()


@triton.jit
def helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def uses_tl(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def calls_helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    helper(x_ptr, out_ptr, n, BLOCK)


WRAPPED = tl.constexpr(Doubler())  # a global Triton allows in a kernel: a constexpr
namespace = type(np)("namespace")  # a module of the candidate's making (Triton allows modules in kernels)
namespace.body = helper


@triton.jit
def calls_namespace(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    namespace.body(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def calls_wrapped(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    WRAPPED(x_ptr, out_ptr, n, BLOCK)
"""

REBOUND_PROBE = """
import json, runpy, sys
import torch
from tritongym.evaluate.guards import CandidateText, LaunchMonitor

path = sys.argv[1]
text = CandidateText.read(path)
module = runpy.run_path(path)
x = torch.arange(32, dtype=torch.float32)


def launch(kernel):
    out = torch.zeros_like(x)
    module["STASH"][:] = [x, out]
    try:
        with LaunchMonitor(path, text=text) as monitor:
            kernel[(2,)](x, out, 32, BLOCK=16)
    except Exception as exc:
        return f"refused: {type(exc).__name__}"
    return {"own": monitor.launches, "foreign": sum(monitor.foreign.values()), "factor": float(out[1] / x[1])}


seen = {"tl": launch(module["uses_tl"]), "helper": launch(module["calls_helper"])}
seen["constexpr object"] = launch(module["calls_wrapped"])
seen["namespace"] = launch(module["calls_namespace"])
scope = module["uses_tl"].fn.__globals__  # the module's globals, rebound after the frontend's checks
scope["tl"] = module["Everything"]()
seen["tl rebound"] = launch(module["uses_tl"])
scope["helper"] = module["Doubler"]()
seen["helper object"] = launch(module["calls_helper"])
del module["namespace"].body  # after the check: the module's attribute now comes from its __getattr__
module["namespace"].__getattr__ = lambda name: module["host"]
seen["module __getattr__"] = launch(module["calls_namespace"])
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def rebound(tmp_path_factory) -> dict:
    """REBOUND_PROBE's launches, once for the module, in a process of its own."""
    path = tmp_path_factory.mktemp("rebound") / "solution.py"
    path.write_text(REBOUND)
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", REBOUND_PROBE, str(path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_names_rebound_after_the_frontends_check_do_not_reach_host_code(rebound):
    """#7: after the frontend accepted a kernel, its global ``tl`` rebound to an object whose
    ``__getattr__`` hands out host functions (``tl.load`` and all), or the JIT function it calls rebound
    to an object with a ``__call__`` (or one held by a global ``tl.constexpr``, which Triton allows in a
    kernel and its code generator calls while it compiles): the ownership rule saw no function (an
    attribute a ``__getattr__`` makes is no attribute it can read; an object is no function), and the
    interpreter ran NumPy. Now
    a kernel runs with its globals as the frontend checked them (a GPU runs what it compiled), and a
    callable object a kernel reaches that is not a library's is not own. #8: a module of the
    candidate's whose attribute, after the check, comes from a module ``__getattr__``: the function
    that makes an attribute at run time is judged as what the kernel reaches."""
    seen = rebound
    assert seen["tl"] == seen["helper"] == seen["namespace"] == {"own": 1, "foreign": 0, "factor": 3.0}, seen
    for route in ("tl rebound", "helper object", "constexpr object", "module __getattr__"):
        result = seen[route]
        assert isinstance(result, str) or not (result["own"] and result["factor"] == 2.0), (route, seen)


@pytest.mark.parametrize("claimed", ["syntax_error", "hack_forbidden_api", "invalid_source"])
def test_a_runner_claiming_a_verdict_of_the_text_breaks_the_protocol(claimed):
    """The open item on the service's cache: it serves the verdicts the text alone decides to every
    identical submission, and a runner could report `syntax_error` or `hack_forbidden_api` about
    itself (an honest one never does: the judge gives them before anything runs), which the cache
    then kept as the text's. Such a claim is now a broken protocol (`crash`), as `ok` is."""
    from tritongym.env.store import TEXT_VERDICTS
    from tritongym.evaluate import Verdict
    from tritongym.evaluate.judge import protocol as p
    from tritongym.evaluate.judge.trials import TEXT_DECIDED, runner_failure

    assert set(TEXT_VERDICTS) <= set(TEXT_DECIDED)
    failure = runner_failure(p.Failed(claimed, "forged", ""), "during import")
    assert failure.verdict is Verdict.CRASH and "broke the sandbox protocol" in failure.feedback, failure.feedback
    assert runner_failure(p.Failed("import_error", "real", ""), "during import").verdict is Verdict.IMPORT_ERROR
