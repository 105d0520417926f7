"""A GPU runner creates no process: its compiler helper runs Triton's assembler for it (red team 4 #7).

On the CPU, as far as it goes without a GPU: Triton compiles a kernel for an NVIDIA target down to a
cubin (``ptxas`` runs) in a process confined by the runner's filter (no process of its own), through
the helper, while every way for that process to run a program itself fails."""

from __future__ import annotations

import ast
import ctypes
import os
import signal
import subprocess
import sys
import traceback

import pytest

from tritongym.evaluate.judge import compiler_helper, seccomp

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the filter is written for x86-64 Linux")

TINY_PTX = """.version 7.0
.target sm_80
.address_size 64
.visible .entry tiny() { ret; }
"""


def tools_or_skip() -> tuple[dict[str, str], str]:
    """The tools a helper runs here, and ptxas's path (the test is skipped without one)."""
    try:
        import triton.backends.nvidia.compiler  # noqa: F401
    except ImportError:
        pytest.skip("Triton's NVIDIA backend (ptxas) is not installed")
    tools = compiler_helper.compiler_tools()
    assemblers = [path for path, kind in tools.items() if kind == compiler_helper.ASSEMBLER]
    if not assemblers:
        pytest.skip("Triton's NVIDIA backend (ptxas) is not installed")
    return tools, assemblers[0]


def as_runner(probe, directory: str, tools: dict[str, str]) -> dict:
    """In a forked child (a stand-in for zygote and runner at once): start a compiler helper for
    ``directory`` running ``tools``, install a runner's filter (no process), then report ``probe(sock)``."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            os.environ["TRITONGYM_RUNNER_LANDLOCK"] = "optional"  # CI kernels may have none
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            helper, sock = compiler_helper.start(dir_fd, os.getpid(), tools, log_fd=2)
            ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            seccomp.confine(os.getpid(), processes=False)
            try:
                seen = probe(sock)
            except BaseException:
                seen = {"probe failed": traceback.format_exc()}
            os.write(write, repr(seen).encode())
            os.killpg(helper, signal.SIGKILL)
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.waitpid(child, 0)
    return ast.literal_eval(b"".join(chunks).decode())


def outcome(call) -> str:
    try:
        result = call()
    except OSError as exc:
        return type(exc).__name__
    except subprocess.CalledProcessError as exc:
        return f"exit {exc.returncode}"
    return "ok" if result is None else str(result)


def test_the_helper_assembles_for_a_runner_that_cannot_run_a_program_itself(tmp_path):
    tools, ptxas = tools_or_skip()
    (tmp_path / "tiny.ptx").write_text(TINY_PTX)
    (tmp_path / "broken.ptx").write_text(TINY_PTX.replace("ret;", "no_such_instruction;"))

    def probe(sock):
        helper = compiler_helper.Tools(sock)
        log = open(tmp_path / "ptxas.log", "w+")  # noqa: SIM115
        assemble = [ptxas, "-v", "--gpu-name=sm_80", str(tmp_path / "tiny.ptx"), "-o", str(tmp_path / "tiny.o")]
        seen = {
            "version": outcome(lambda: b"ptxas" in helper.check_output([ptxas, "--version"])),
            "assemble": outcome(lambda: helper.run(assemble, check=True, stderr=log).returncode),
            "broken": outcome(
                lambda: helper.run([ptxas, "--gpu-name=sm_80", str(tmp_path / "broken.ptx")], check=True, stderr=log)
            ),
            "python through the helper": outcome(lambda: helper.run([sys.executable, "-c", "pass"])),
            "python itself": outcome(lambda: subprocess.run([sys.executable, "-c", "pass"])),
            "ptxas itself": outcome(lambda: subprocess.run([ptxas, "--version"], capture_output=True)),
            "posix_spawn": outcome(lambda: os.posix_spawn(ptxas, [ptxas, "--version"], {})),
            "fork": outcome(os.fork),
        }
        log.seek(0)
        seen["log"] = log.read()
        return seen

    seen = as_runner(probe, str(tmp_path), tools)
    assert seen.get("version") == "True", seen
    assert seen["assemble"] == "0" and (tmp_path / "tiny.o").read_bytes()[:4] == b"\x7fELF", seen
    assert seen["broken"].startswith("exit ") and "no_such_instruction" in seen["log"], seen
    assert seen["python through the helper"] == "PermissionError", seen
    for what in ("python itself", "ptxas itself", "posix_spawn", "fork"):
        assert seen[what] == "PermissionError", (what, seen)


def test_triton_compiles_a_kernel_to_a_cubin_in_a_runner_through_its_helper(tmp_path):
    """Triton's own compile (``make_cubin``, ``get_ptxas_version``) for an sm_90 target, in a fresh
    cache: routed through the helper it yields a cubin, without it the assembler cannot start."""
    tools, _ = tools_or_skip()
    kernel = tmp_path / "kernel.py"
    kernel.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef double(x, y, n: tl.constexpr):\n"
        "    o = tl.arange(0, n)\n    tl.store(y + o, tl.load(x + o) * 2)\n"
    )

    def compile_once(cache: str) -> str:
        import importlib.util

        import triton
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia import compiler
        from triton.compiler import ASTSource

        os.environ["TRITON_CACHE_DIR"] = cache
        compiler.get_ptxas_version.cache_clear()
        spec = importlib.util.spec_from_file_location("kernel", kernel)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        source = ASTSource(module.double, {"x": "*fp32", "y": "*fp32", "n": "constexpr"}, constexprs={"n": 16})
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
        return compiled.asm["cubin"][:4]

    def probe(sock):
        import tempfile

        tempfile.tempdir = str(tmp_path)  # Triton's scratch files beneath the runner's directory
        alone = outcome(lambda: compile_once(str(tmp_path / "cache-alone")))
        changed = compiler_helper.route_triton(compiler_helper.Tools(sock))
        return {"alone": alone, "changed": changed, "helped": outcome(lambda: compile_once(str(tmp_path / "cache")))}

    seen = as_runner(probe, str(tmp_path), tools)
    assert seen.get("alone") == "PermissionError", seen
    assert "triton.backends.nvidia.compiler" in seen["changed"], seen
    assert seen["helped"] == repr(b"\x7fELF"), seen


TOOLS = {"/x/ptxas": compiler_helper.ASSEMBLER, "/x/cc": compiler_helper.C_COMPILER}
BUILD = ["/x/cc", "/j/main.c", "-O3", "-shared", "-fPIC", "-Wno-psabi", "-o", "/j/m.so", "-lcuda", "-L/l", "-I/i"]
"""Triton's build of a C module (runtime/build.py), as a runner asks for it."""


def test_a_helper_refuses_what_it_does_not_run(tmp_path):
    c_build_options = {
        "a wrapper": [*BUILD, "-wrapper", "/bin/sh,-c"],
        "a program prefix": [*BUILD, "-B/tmp/evil"],
        "a plugin": [*BUILD, "-fplugin=/tmp/evil.so"],
        "a response file": [*BUILD, "@/tmp/options"],
        "a specs file": [*BUILD, "-specs=/tmp/specs"],
        "a linker option": [*BUILD, "-Wl,--plugin=/tmp/evil.so"],
        "C++": [*BUILD, "-std=c++17"],
        "two sources": [*BUILD, "/j/other.c"],
        "no output": BUILD[:6],
        "an output that is an option": [*BUILD[:7], "-fplugin=x.so"],
    }
    refused = {f"cc with {what}": {"argv": argv} for what, argv in c_build_options.items()} | {
        "another binary": {"argv": ["/bin/sh", "-c", "true"]},
        "no argv": {"argv": []},
        "not strings": {"argv": ["/x/ptxas", 1]},
        "a NUL": {"argv": ["/x/ptxas", "a\0b"]},
        "an unknown stream": {"argv": ["/x/ptxas"], "stdout": "socket"},
        "stdout to stdout": {"argv": ["/x/ptxas"], "stdout": "stdout"},
        "a descriptor not sent": {"argv": ["/x/ptxas"], "stdout": "pipe", "stderr": "fd"},
    }
    ran = []
    for what, request in refused.items():
        try:
            compiler_helper.run_tool(request, [], TOOLS, str(tmp_path))
            ran.append(what)
        except compiler_helper.ToolRefused:
            pass
    assert not ran
    read, write = os.pipe()
    try:
        with pytest.raises(compiler_helper.ToolRefused, match="descriptors more"):
            request = {"argv": ["/x/ptxas"], "stdout": "pipe", "stderr": "devnull"}
            compiler_helper.run_tool(request, [read], TOOLS, str(tmp_path))
    finally:
        os.close(read)
        os.close(write)
    for argv in (["/x/ptxas"], BUILD):
        answer = compiler_helper.run_tool({"argv": argv}, [1, 2], TOOLS, str(tmp_path))
        assert answer["errno"] == 2 and argv[0] in answer["error"]  # allowed but absent: FileNotFoundError


def test_the_helper_builds_a_c_module_as_triton_does(tmp_path):
    """Triton 3.4-3.6 build a launcher per kernel signature in the runner where the launcher store
    lacks it: Triton's own build, through the helper, in a runner that cannot run the compiler."""
    tools, _ = tools_or_skip()
    if compiler_helper.C_COMPILER not in tools.values():
        pytest.skip("no C compiler")
    source = tmp_path / "tiny.c"
    source.write_text("int tiny(void) { return 7; }\n")

    def probe(sock):
        import inspect

        from triton.runtime import build

        extra = {"ccflags": []} if "ccflags" in inspect.signature(build._build).parameters else {}  # 3.7 on

        def triton_build() -> str:
            return build._build("tiny", str(source), str(tmp_path), [], [], [], **extra)

        alone = outcome(triton_build)
        compiler_helper.route_triton(compiler_helper.Tools(sock))
        return {"alone": alone, "built": ctypes.CDLL(triton_build()).tiny()}

    seen = as_runner(probe, str(tmp_path), tools)
    assert seen == {"alone": "PermissionError", "built": 7}, seen.get("probe failed", seen)


def test_the_zygote_keeps_a_live_runners_helper_and_kills_it_with_its_runner():
    """A helper is the zygote's child but no orphan: the sweep spares it while its runner lives; once
    the runner is reaped (and reported), its helper's group is killed."""
    import socket
    import time

    from tritongym.evaluate.judge import zygote

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # plays the zygote: its only children are one runner and its helper
        try:
            helper = os.fork()
            if helper == 0:
                os.setsid()
                signal.pause()
                os._exit(0)
            runner = os.fork()
            if runner == 0:
                signal.pause()
                os._exit(0)
            ours, theirs = socket.socketpair()
            runners, helpers = {runner}, {runner: helper}
            zygote._kill_orphans(runners, helpers)
            time.sleep(0.2)
            spared = os.waitpid(helper, os.WNOHANG) == (0, 0) and os.waitpid(runner, os.WNOHANG) == (0, 0)
            os.kill(runner, signal.SIGKILL)
            deadline, helper_gone = time.monotonic() + 10, False
            while not helper_gone and time.monotonic() < deadline:
                zygote._reap(ours, runners, helpers)
                try:
                    os.kill(helper, 0)
                except ProcessLookupError:  # killed and reaped
                    helper_gone = True
                time.sleep(0.05)
            event = theirs.recv(zygote.EVENT.size)[:1]
            report = {"spared": spared, "event": event, "helper gone": helper_gone, "left": helpers}
            os.write(write, repr(report).encode())
        finally:
            os._exit(0)
    os.close(write)
    report = os.read(read, 4096)
    os.waitpid(child, 0)
    assert ast.literal_eval(report.decode()) == {"spared": True, "event": b"X", "helper gone": True, "left": {}}
