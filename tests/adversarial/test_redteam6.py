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
