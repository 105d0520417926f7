"""Triton's compiler binaries run for a GPU runner by a helper process, so that no runner creates a process.

Triton compiles a kernel at its first launch, in the runner, and its NVIDIA backend runs ``ptxas`` as a
subprocess (``make_cubin``; ``ptxas --version`` too). A runner that may create processes can also fork
a child that computes with PyTorch where the runner's op recorder, its witness and the thread counter
do not look (red team 4 #7), and no filter on the runner can tell that child from ptxas's: a
``vfork`` child shares the runner's memory, but what it executes does not, and ptxas is dynamically
linked, so the dynamic loader would have to be executable, and ``ld.so /any/program`` runs any
program whatever Landlock's execute right allows. So runners create no process on a GPU either
(seccomp.py), and the zygote forks, beside each GPU runner, a helper that runs the compiler binaries
for it:

* The helper runs only the assembler binaries Triton resolved in the zygote (``knobs.nvidia.ptxas``
  and ``ptxas_blackwell``; ``TRITON_PTXAS_PATH`` is honoured there), with the arguments the runner
  sends, in the runner's directory, with an environment of its own and the runner's files for the
  assembler's output and log (passed as descriptors). ptxas reads a PTX file and writes a cubin: it
  runs no program (none of its options does). It also runs the C compiler Triton would (``CC``,
  else gcc, else clang) for the one command Triton's ``build`` makes of a C module (Triton 3.4-3.6
  build a launcher per kernel signature in the runner where the launcher store lacks it), and only
  with that command's arguments: a compiler's options can run other programs (``-wrapper``, ``-B``,
  ``-fplugin``, ``@file``, ``-specs``), which are refused.
* The helper is confined like a runner (capabilities dropped, Landlock writes only beneath the
  runner's directory, the seccomp filter of signals and process access; it may create processes, to
  run the tools), leads a session of its own, and is killed with its process group when the
  zygote reaps its runner.
* In the runner, Triton's modules that start these tools (``TRITON_MODULES``) get :class:`Tools` in
  place of their ``subprocess`` module: ``run``, ``check_output`` and ``check_call`` ask the helper.
  A candidate that undoes that only loses its own compiles (its exec fails with EPERM).

A request is a length-prefixed JSON object (``argv``, what to do with the tool's stdout and stderr)
sent with the descriptors it names; the answer is one JSON object (``returncode``, the captured
output, or ``error`` when the helper refused). It runs no other binary.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence

HEADER = struct.Struct("<I")
MAX_REQUEST = 1 << 20
"""Largest request (argv and its strings) the helper reads."""
MAX_ARGS, MAX_ARG = 512, 16384
MAX_OUTPUT = 1 << 20
"""Most bytes of a tool's captured stdout or stderr sent back."""
TOOL_TIMEOUT_S = 600.0
"""A tool that runs longer is killed (the job's own deadline is usually shorter: the runner then dies
and the zygote kills the helper with it)."""
TOOL_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C"}
"""The tool's whole environment, plus HOME and TMPDIR (the runner's directory)."""
STREAMS = ("inherit", "pipe", "devnull", "fd", "stdout")
"""What a request may ask for a stream: the runner's own (stdout: fd 1, stderr: fd 2, passed along),
captured and sent back, /dev/null, a descriptor passed with the request, or (stderr only) stdout's."""


class ToolRefused(Exception):
    """The helper did not run what a runner asked for."""


ASSEMBLER, C_COMPILER = "assembler", "c compiler"
"""The kinds of tool a helper runs."""


def compiler_tools() -> dict[str, str]:
    """The binaries a helper runs, by path, with their kind: the ptxas binaries Triton would run here,
    as Triton names them (its ``knobs``; none without Triton's NVIDIA backend), and the C compiler its
    ``build`` would choose. Called in the zygote (it runs ``ptxas --version`` once, which Triton
    caches: forked runners then ask nothing more for it)."""
    tools: dict[str, str] = {}
    try:
        from triton import knobs

        nvidia = knobs.nvidia
    except (ImportError, AttributeError):
        nvidia = None
    for name in ("ptxas", "ptxas_blackwell") if nvidia is not None else ():
        try:
            tool = getattr(nvidia, name)
        except (AttributeError, OSError, RuntimeError, subprocess.SubprocessError):
            continue
        if tool is not None and getattr(tool, "path", None):
            tools[tool.path] = ASSEMBLER
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        tools.setdefault(cc, C_COMPILER)
    return tools


C_FLAGS = frozenset({"-O3", "-shared", "-fPIC", "-Wno-psabi"})
"""The fixed flags of Triton's build of a C module."""


def check_c_build(args: list[str]) -> None:
    """Refuse a C compiler's arguments other than those of Triton's build of a C module: one ``.c``
    source, the fixed flags, ``-o <module>.so`` and ``-l``/``-L``/``-I`` with their value attached."""
    sources, output, i = 0, None, 0
    while i < len(args):
        arg = args[i]
        if arg == "-o" and i + 1 < len(args):
            output, i = args[i + 1], i + 1
        elif arg in C_FLAGS or (arg[:2] in ("-l", "-L", "-I") and len(arg) > 2):
            pass
        elif arg.endswith(".c") and not arg.startswith(("-", "@")):
            sources += 1
        else:
            raise ToolRefused(f"{arg[:100]!r} is not an argument of Triton's build of a C module")
        i += 1
    if sources != 1 or output is None or not output.endswith(".so") or output.startswith(("-", "@")):
        raise ToolRefused("a C module's build names one .c source and -o <module>.so")


# -- framing ------------------------------------------------------------------------------------


def _send(sock: socket.socket, payload: dict, fds: Sequence[int] = ()) -> None:
    data = json.dumps(payload).encode()
    message = HEADER.pack(len(data)) + data
    sent = socket.send_fds(sock, [message], list(fds)) if fds else sock.send(message)
    if sent < len(message):
        sock.sendall(message[sent:])


def _receive(sock: socket.socket, limit: int) -> tuple[dict | None, list[int]]:
    """One message and the descriptors that came with it; (None, []) when the peer is gone."""
    head, fds, _, _ = socket.recv_fds(sock, HEADER.size, 4)
    if not head:
        return None, fds
    while len(head) < HEADER.size:
        more = sock.recv(HEADER.size - len(head))
        if not more:
            return None, fds
        head += more
    (size,) = HEADER.unpack(head)
    if size > limit:
        raise ToolRefused(f"a message of {size} bytes (at most {limit})")
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 16))
        if not chunk:
            return None, fds
        data += chunk
    try:
        payload = json.loads(data)
    except ValueError as exc:
        raise ToolRefused(f"not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise ToolRefused("not a JSON object")
    return payload, fds


# -- the helper ---------------------------------------------------------------------------------


def _check_argv(argv, tools: Mapping[str, str]) -> list[str]:
    if not isinstance(argv, list) or not 0 < len(argv) <= MAX_ARGS:
        raise ToolRefused("argv must be a non-empty list")
    if not all(isinstance(a, str) and len(a) <= MAX_ARG and "\0" not in a for a in argv):
        raise ToolRefused("every argument must be a string without NUL")
    kind = tools.get(argv[0])
    if kind is None:
        raise ToolRefused(f"{argv[0][:200]!r} is not a compiler binary this helper runs")
    if kind == C_COMPILER:
        check_c_build(argv[1:])
    return argv


def _stream(kind, fds: list[int], default: int, directory: str, captured: list):
    """A ``subprocess`` stream for a request's ``kind`` (descriptors passed along are taken in order).
    Output to capture goes to a file of the runner's directory (``captured``), not to a pipe whose
    bytes the helper would hold: a tool can write far more than the ``MAX_OUTPUT`` sent back, and the
    helper's memory is no runner's (red team 6 #2)."""
    if kind not in STREAMS:
        raise ToolRefused(f"unknown stream {kind!r}")
    if kind in ("inherit", "fd"):
        if not fds:
            raise ToolRefused(f"stream {kind!r} without its descriptor")
        return fds.pop(0)
    if kind == "stdout" and default != 2:
        raise ToolRefused("only stderr may go to stdout")
    if kind == "pipe":
        captured.append(tempfile.TemporaryFile(dir=directory))  # noqa: SIM115 (closed by run_tool)
        return captured[-1]
    return {"devnull": subprocess.DEVNULL, "stdout": subprocess.STDOUT}[kind]


def run_tool(request: dict, fds: list[int], tools: Mapping[str, str], directory: str) -> dict:
    """Run what one request asks for; the answer to send back."""
    argv = _check_argv(request.get("argv"), tools)
    given, captured = list(fds), []
    try:
        stdout = _stream(request.get("stdout", "inherit"), given, 1, directory, captured)
        stderr = _stream(request.get("stderr", "inherit"), given, 2, directory, captured)
        if given:
            raise ToolRefused(f"{len(given)} descriptors more than the streams named")
        env = TOOL_ENV | {"HOME": directory, "TMPDIR": directory}
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=directory, env=env,
                timeout=TOOL_TIMEOUT_S, close_fds=True, start_new_session=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"returncode": -int(signal.SIGKILL), "stdout": "", "stderr": "", "timed_out": True}
        except OSError as exc:
            return {"error": f"{argv[0]}: {exc}", "errno": exc.errno}

        def encoded(stream) -> str:
            if not hasattr(stream, "read"):
                return ""
            stream.seek(0)
            return base64.b64encode(stream.read(MAX_OUTPUT)).decode()

        return {"returncode": done.returncode, "stdout": encoded(stdout), "stderr": encoded(stderr)}
    finally:
        for stream in captured:
            stream.close()


def serve(sock: socket.socket, tools: Mapping[str, str], directory: str) -> None:
    """Answer one runner's requests until it closes its end."""
    while True:
        try:
            request, fds = _receive(sock, MAX_REQUEST)
        except ToolRefused as exc:
            _send(sock, {"error": str(exc)})
            return  # the stream may be out of step: stop
        except OSError:
            return
        if request is None:
            for fd in fds:
                os.close(fd)
            return
        try:
            answer = run_tool(request, fds, tools, directory)
        except ToolRefused as exc:
            answer = {"error": str(exc)}
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        try:
            _send(sock, answer)
        except OSError:
            return


def start(dir_fd: int, zygote: int, tools: Mapping[str, str], log_fd: int) -> tuple[int, socket.socket]:
    """Fork the helper of one runner (called in the zygote, before the runner's fork): its pid and the
    runner's end of their socket. ``dir_fd`` names the runner's directory; the helper's own failures go
    to ``log_fd`` (the runner's stderr pipe)."""
    theirs, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            theirs.close()
            _become_helper(ours.fileno(), dir_fd, zygote, tools, log_fd)
        finally:
            os._exit(71)
    ours.close()
    return pid, theirs


def _become_helper(sock_fd: int, dir_fd: int, zygote: int, tools: Mapping[str, str], log_fd: int) -> None:
    import resource

    from tritongym.evaluate.judge import landlock, seccomp
    from tritongym.evaluate.judge.zygote import (
        FILE_SIZE_LIMIT,
        PR_SET_CHILD_SUBREAPER,
        PR_SET_DUMPABLE,
        die_with_parent,
        drop_capabilities,
        prctl,
    )

    directory = os.readlink(f"/proc/self/fd/{dir_fd}")
    os.setsid()  # its own group: the zygote kills it with whatever it runs
    die_with_parent(zygote)
    prctl(PR_SET_CHILD_SUBREAPER, 0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(log_fd, 2)
    keep = os.dup2(sock_fd, 3) if sock_fd != 3 else 3
    os.closerange(4, 1 << 16)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    drop_capabilities()
    landlock.confine_runner(directory, "cpu", shares_judge_user=True)  # writes beneath the runner's directory
    if seccomp.supported():
        seccomp.confine(os.getpid(), processes=True)  # its only work is running compiler binaries
    prctl(PR_SET_DUMPABLE, 0)
    serve(socket.socket(fileno=keep), tools, directory)


# -- the runner's side --------------------------------------------------------------------------


class Tools:
    """Stands in for the ``subprocess`` module in Triton's modules of a runner: every process they
    would start is asked of the helper (``run``, ``check_output``, ``check_call``, as Triton calls them)."""

    PIPE, STDOUT, DEVNULL = subprocess.PIPE, subprocess.STDOUT, subprocess.DEVNULL
    CalledProcessError = subprocess.CalledProcessError
    TimeoutExpired = subprocess.TimeoutExpired
    CompletedProcess = subprocess.CompletedProcess
    SubprocessError = subprocess.SubprocessError

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.lock = threading.Lock()

    @staticmethod
    def _spec(stream, default_fd: int, allow_stdout: bool) -> tuple[str, list[int]]:
        if stream is None:
            return "inherit", [default_fd]
        if stream == subprocess.PIPE:
            return "pipe", []
        if stream == subprocess.DEVNULL:
            return "devnull", []
        if stream == subprocess.STDOUT and allow_stdout:
            return "stdout", []
        fd = stream if isinstance(stream, int) else stream.fileno()
        if fd < 0:
            raise ValueError(f"not a stream: {stream!r}")
        return "fd", [fd]

    def run(self, args, *, stdout=None, stderr=None, check=False, capture_output=False, **_ignored):
        """``subprocess.run`` through the helper (stdin is /dev/null; cwd and env are the helper's)."""
        if capture_output:
            stdout = stderr = subprocess.PIPE
        argv = [os.fspath(a) for a in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
        argv = [a.decode() if isinstance(a, bytes) else a for a in argv]
        out_kind, out_fds = self._spec(stdout, 1, allow_stdout=False)
        err_kind, err_fds = self._spec(stderr, 2, allow_stdout=True)
        for stream in (stdout, stderr):
            if hasattr(stream, "flush"):  # what Python buffered goes before what the tool writes
                with contextlib.suppress(Exception):
                    stream.flush()
        with self.lock:
            _send(self.sock, {"argv": argv, "stdout": out_kind, "stderr": err_kind}, out_fds + err_fds)
            answer, fds = _receive(self.sock, 4 * MAX_OUTPUT + 4096)
        for fd in fds:
            os.close(fd)
        if answer is None:
            raise OSError(f"the compiler helper is gone (running {argv[0]})")
        if "error" in answer:
            code = answer.get("errno")
            if code == 2:
                raise FileNotFoundError(code, answer["error"])
            raise PermissionError(code or 1, f"the compiler helper refused: {answer['error']}")
        out = base64.b64decode(answer.get("stdout") or "") if stdout == subprocess.PIPE else None
        err = base64.b64decode(answer.get("stderr") or "") if stderr == subprocess.PIPE else None
        code = int(answer["returncode"])
        if answer.get("timed_out"):
            raise subprocess.TimeoutExpired(argv, TOOL_TIMEOUT_S, out, err)
        if check and code:
            raise subprocess.CalledProcessError(code, argv, out, err)
        return subprocess.CompletedProcess(argv, code, out, err)

    def check_output(self, args, **kwargs):
        kwargs.pop("stdout", None)
        return self.run(args, stdout=subprocess.PIPE, check=True, **kwargs).stdout

    def check_call(self, args, **kwargs):
        self.run(args, check=True, **kwargs)
        return 0


TRITON_MODULES = ("triton.backends.nvidia.compiler", "triton.knobs", "triton.runtime.build")
"""Triton's modules that start a compiler binary (``make_cubin``, ``get_ptxas_version``, ``NvidiaTool``;
``build`` of a C module)."""


def route_triton(tools: Tools) -> list[str]:
    """Have Triton's modules ask the helper for their processes; the modules changed."""
    changed = []
    for name in TRITON_MODULES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "subprocess", None) is subprocess:
            module.subprocess = tools
            changed.append(name)
    return changed
