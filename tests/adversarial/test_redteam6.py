"""The sixth red team's breaks (tests/adversarial/redteam6/README.md). Each test asserts the safe
behaviour; those of breaks still open are marked xfail(strict=True) and flip when fixed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from tritongym.evaluate.judge import compiler_helper, seccomp
from tritongym.evaluate.judge.runners import tree_memory_bytes

HERE = Path(__file__).parent / "redteam6"
CC = shutil.which("gcc") or shutil.which("cc")

needs_cc = pytest.mark.skipif(
    CC is None or not seccomp.supported(), reason="a C compiler and the filter (x86-64 Linux) are needed"
)


def macro_bomb(expansions: int) -> str:
    """C whose preprocessing expands to 16**(expansions + 1) initialisers: cc1's memory grows with it."""
    lines = ["#define A0 " + ",".join(["0"] * 16)]
    lines += [f"#define A{i} " + ",".join([f"A{i - 1}"] * 16) for i in range(1, expansions + 1)]
    return "\n".join([*lines, f"int a[] = {{A{expansions}}};", ""])


def noisy(errors: int) -> str:
    """C with ``errors`` syntax errors on one line: gcc writes about 2.3 KB of diagnostics for each."""
    return " ".join(f"int a{i} = ;" for i in range(errors)) + "\n"


def with_helper(directory: Path, argv: list[str], watch) -> dict:
    """A stand-in for a zygote forks a compiler helper for ``directory`` (running the C compiler), then a
    runner, which asks the helper for ``argv`` (its output captured) and reports the answer's sizes;
    ``watch(runner, helper)`` runs here meanwhile, until the runner ends. Returns what the runner saw."""
    read, write = os.pipe()
    zygote = os.fork()
    if zygote == 0:
        try:
            os.setsid()
            os.environ["TRITONGYM_RUNNER_LANDLOCK"] = "optional"  # CI kernels may have none
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            helper, sock = compiler_helper.start(dir_fd, os.getpid(), {CC: compiler_helper.C_COMPILER}, log_fd=2)
            runner = os.fork()
            if runner == 0:
                try:
                    done = compiler_helper.Tools(sock).run(argv, capture_output=True)
                    seen = {"returncode": done.returncode, "stderr": len(done.stderr), "stdout": len(done.stdout)}
                    os.write(write, json.dumps(seen).encode())
                finally:
                    os._exit(0)
            os.write(write, json.dumps({"runner": runner, "helper": helper}).encode() + b"\n")
            os.waitpid(runner, 0)
            os.killpg(helper, signal.SIGKILL)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        pids = json.loads(fh.readline())
        watch(pids["runner"], pids["helper"])
        seen = json.loads(fh.read() or b"{}")
    os.waitpid(zygote, 0)
    return seen


def peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1])


@needs_cc
def test_the_compiler_helpers_tools_count_as_the_runners_memory(tmp_path):
    """#1: a GPU runner's compiler helper is the zygote's child, not the runner's, and it runs the C
    compiler on whatever file the runner names: a macro bomb took cc1 to gigabytes outside every
    measure of the runner's memory (runners.tree_memory_bytes of the runner's tree). Now the helper's
    tools count as the runner's (the zygote reports the helper's pid with the runner's)."""
    (tmp_path / "hog.c").write_text(macro_bomb(4))  # about 150 MB in cc1
    peaks = {"runner": 0, "with tools": 0}

    def watch(runner: int, helper: int) -> None:
        while os.path.exists(f"/proc/{runner}/stat"):
            with open(f"/proc/{runner}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            peaks["runner"] = max(peaks["runner"], tree_memory_bytes(runner))
            peaks["with tools"] = max(peaks["with tools"], tree_memory_bytes(runner, 0, helper))
            time.sleep(0.02)

    seen = with_helper(tmp_path, [CC, "-O3", "-shared", "-fPIC", str(tmp_path / "hog.c"), "-o", "hog.so"], watch)
    assert seen.get("returncode") == 0, seen
    assert peaks["with tools"] - peaks["runner"] > 100 << 20, peaks


@needs_cc
def test_a_tools_output_is_not_held_in_the_helpers_memory(tmp_path):
    """#2: the helper captured a tool's output through pipes (``subprocess.run``), all of it, and cut it
    to ``MAX_OUTPUT`` only then: a C file of many errors made the helper, whose memory is no runner's,
    hold every byte of the diagnostics (gigabytes for a larger file). Now captured output goes to a
    file of the runner's directory and only ``MAX_OUTPUT`` bytes of it are read."""
    (tmp_path / "noisy.c").write_text(noisy(9000))  # about 21 MB of diagnostics
    grown = {}

    def watch(runner: int, helper: int) -> None:
        start = peak_kib(helper)
        grown["kib"] = 0
        while os.path.exists(f"/proc/{runner}/stat"):
            with open(f"/proc/{runner}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            grown["kib"] = peak_kib(helper) - start
            time.sleep(0.02)

    seen = with_helper(tmp_path, [CC, "-O3", "-shared", "-fPIC", str(tmp_path / "noisy.c"), "-o", "noisy.so"], watch)
    assert seen.get("returncode") == 1 and seen["stderr"] == compiler_helper.MAX_OUTPUT, seen
    assert grown["kib"] < 12 << 10, grown


HONEST_PATTERNS = """
import triton
import triton.language as tl
import torch


@triton.jit
def _scale(x, factor):
    return x * factor


@triton.jit
def helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _scale(tl.sigmoid(x), 2.0) + tl.sum(x, axis=0) * 0, mask=mask)


@triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
@triton.heuristics({"BLOCK": lambda args: 16})
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def make_kernel(factor):
    @triton.jit
    def made(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, _scale(tl.load(x_ptr + offs, mask=mask), 2.0), mask=mask)

    return made


class Kernels:
    @staticmethod
    @triton.jit
    def in_class(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def calls_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    body(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def calls_tl(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.zz_borrowed(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def doubles(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def calls_given(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BODY: tl.constexpr):
    BODY(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def calls_by_name(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    getattr(tl, "zz_borrowed")(x_ptr, out_ptr, n, BLOCK)


@triton.jit
def calls_computed_name(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    getattr(tl, "".join(["zz_", "borrowed"]))(x_ptr, out_ptr, n, BLOCK)


class Holder:
    body = None


holder = Holder()


@triton.jit
def calls_held(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    holder.body(x_ptr, out_ptr, n, BLOCK)


def with_default(body):
    @triton.jit
    def calls_default(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BODY: tl.constexpr = body):
        BODY(x_ptr, out_ptr, n, BLOCK)

    return calls_default
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


OWNERSHIP_PROBE = """
import json, runpy, sys
import torch
import triton.language as tl
from tritongym.evaluate.guards import CandidateText, LaunchMonitor

path, other = sys.argv[1], sys.argv[2]
module = runpy.run_path(path)
x = torch.arange(32, dtype=torch.float32)


def launches(kernel, **meta):
    out = torch.zeros_like(x)
    try:
        with LaunchMonitor(path, text=CandidateText.read(path)) as monitor:
            kernel[(2,)](x, out, 32, **meta)
    except Exception as exc:  # Triton's frontend refused the kernel at its launch, as a GPU's compile would
        return f"refused: {type(exc).__name__}"
    return [monitor.launches, sum(monitor.foreign.values())]


seen = {
    "helpers": launches(module["helper_kernel"], BLOCK=16),
    "heuristics": launches(module["tuned_kernel"]),
    "factory": launches(module["make_kernel"](2.0), BLOCK=16),
    "class body": launches(module["Kernels"].in_class, BLOCK=16),
    "own body": launches(module["calls_body"], BLOCK=16),
    "own function passed": launches(module["calls_given"], BLOCK=16, BODY=module["doubles"]),
    # before the global `body` is rebound below: the default's expression names it, and both a GPU's
    # source and the interpreter's rewrite (which evaluates the defaults again) read that name
    "own default": launches(module["with_default"](module["doubles"]), BLOCK=16),
}
seen["other function passed"] = launches(module["calls_given"], BLOCK=16, BODY=runpy.run_path(other)["borrowed"])
module["calls_body"].fn.__globals__["body"] = runpy.run_path(other)["borrowed"]
seen["rebound body"] = launches(module["calls_body"], BLOCK=16)
tl.zz_borrowed = runpy.run_path(other)["borrowed"]
seen["on triton.language"] = launches(module["calls_tl"], BLOCK=16)
seen["by getattr"] = launches(module["calls_by_name"], BLOCK=16)
seen["computed name"] = launches(module["calls_computed_name"], BLOCK=16)
module["Holder"].body = runpy.run_path(other)["borrowed"]
seen["class attribute"] = launches(module["calls_held"], BLOCK=16)
seen["other default"] = launches(module["with_default"](runpy.run_path(other)["borrowed"]), BLOCK=16)
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def ownership(tmp_path_factory) -> dict:
    """OWNERSHIP_PROBE's launches, once for the module (in a process of its own: Triton's interpreter is
    chosen when Triton is imported)."""
    import subprocess
    import sys

    directory = tmp_path_factory.mktemp("ownership")
    path, other = directory / "solution.py", directory / "other.py"
    path.write_text(HONEST_PATTERNS)
    other.write_text(BORROWED)
    env = os.environ | {"TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", OWNERSHIP_PROBE, str(path), str(other)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_kernel_is_not_the_candidates_when_it_calls_a_function_that_is_not(ownership):
    """#3: the launched kernel is the text's, the function it calls (rebound among its globals, or put
    on `triton.language`) is another file's: its launches are foreign, while honest patterns (JIT
    helpers of the text, `tl.sum`/`tl.sigmoid`, heuristics (autotune needs a GPU's benchmarker), a
    kernel made by a factory and one in a class body) stay the candidate's own. #4: the same function
    passed as an argument; #5: named by a string (`getattr`) or a parameter's default."""
    seen = ownership
    for honest in ("helpers", "heuristics", "factory", "class body", "own body", "own function passed", "own default"):
        assert seen[honest] == [1, 0], (honest, seen)
    # each attack's launch is another's work ([0, 1]), or Triton's frontend refuses the kernel at its
    # launch (frontend.py, as a GPU's compile would): either way the borrowed kernel does no work of its own
    for attack in ("rebound body", "on triton.language", "other function passed", "by getattr", "other default",
                   "class attribute"):  # fmt: skip
        assert seen[attack] == [0, 1] or str(seen[attack]).startswith("refused"), (attack, seen)


def test_a_name_computed_at_run_time_does_not_hide_a_function_from_the_interpreter(ownership):
    """#5's residue: a name built at run time (`getattr(tl, "".join(...))`) is not followed by the
    ownership check, but Triton's frontend, which now runs before an interpreted kernel's first launch
    (frontend.py), refuses such a kernel as a GPU's compile does."""
    assert str(ownership["computed name"]).startswith("refused"), ownership


@pytest.mark.parametrize(
    "name", ["calls_the_bundled_solution_from_its_kernel.py", "passes_the_bundled_solution_to_its_kernel.py"]
)
def test_the_environments_solution_called_from_a_kernel_of_the_text_is_not_its_work(warm_env, name):
    """#3 and #4 end to end: the text's kernel calls `body`, rebound to the bundled softmax solution's
    kernel (runpy), or a parameter the launch passes it as: `ok` before, since the launched kernel's
    code and source are the text's."""
    from helpers import small_problem
    from tritongym.evaluate import EvalConfig, Verdict

    source = (HERE / name).read_text()
    config = EvalConfig(device="cpu", trials=2, timing_budget_s=1.0)
    result = warm_env.submit(small_problem("softmax"), source, config).result()
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


TOOL_RUNNER = """
import subprocess, sys, time
burn = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < {s}: pass"
subprocess.run([sys.executable, "-c", burn.format(s=0.5)])  # a tool that ran and was reaped
running = subprocess.Popen([sys.executable, "-c", burn.format(s=30)])  # one still running
print("ready", flush=True)
time.sleep(60)
"""


def test_the_compiler_tools_cpu_time_counts_as_the_runners():
    """The open item: a GPU runner's compiler helper runs its tools (ptxas, the C compiler) on its
    own core, outside the runner's RLIMIT_CPU. The judge now measures the runner's processes and the
    helper's tools together (``tree_cpu_seconds``: the tools it reaped and those running, not the
    helper's own serving) against the runner's budget plus its grace, and ends the job past it. A
    stand-in helper (a process that ran one tool for 0.5 CPU s and runs another) beside an idle runner."""
    import subprocess
    import sys

    from tritongym.evaluate.judge.runners import CpuTimeExceeded, RunnerHandle, start_time, tree_cpu_seconds

    runner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    helper = subprocess.Popen([sys.executable, "-c", TOOL_RUNNER], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert helper.stdout.readline() == b"ready\n"
        time.sleep(0.3)  # the running tool spends some
        alone, together = tree_cpu_seconds(runner.pid), tree_cpu_seconds(runner.pid, helper.pid)
        assert alone < 0.2 and together >= 0.6, (alone, together)
        handle = RunnerHandle.__new__(RunnerHandle)  # the judge's view of that runner, without a zygote
        handle.pid, handle.uid, handle.directory, handle.memory_limit = runner.pid, 0, "/nonexistent", 1 << 62
        handle.helper, handle._helper_started = helper.pid, start_time(helper.pid)
        handle.cpu_limit_s, handle._next_memory_check = together + 60, 0.0
        handle.gpu_readings = None  # a CPU runner's: its GPU memory is not read
        handle._tick()  # within the budget: nothing
        handle.cpu_limit_s, handle._next_memory_check = together / 2, 0.0
        with pytest.raises(CpuTimeExceeded):
            handle._tick()
    finally:
        runner.kill()
        os.killpg(helper.pid, signal.SIGKILL)
        for proc in (runner, helper):
            proc.wait()
