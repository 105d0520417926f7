"""The zygote: a warm, pre-imported parent from which runners are forked.

The judge forks it at start-up, before it has initialised CUDA or seen any job (so the zygote shares
the judge's imports and holds nothing of any job); a zygote that dies later (a runner may kill it) is
replaced by ``python -m tritongym.evaluate.judge.zygote FD PARENT DEVICE``, a fresh executable, since
a judge with a CUDA context must not fork. It imports torch, Triton and the runner's modules, never
initialises CUDA (a forked CUDA context is unusable), keeps one thread, and then serves requests on
its control socket: each is the byte ``f`` with four file descriptors (the runner's socket, the
write ends of its stdout and stderr pipes, and its directory), answered with ``F`` and the new pid. Children it
reaps are reported as ``X``, pid and wait status. It is the subreaper of everything its runners
start, and kills any such orphan on sight. For a GPU runner it first forks the runner's compiler
helper (compiler_helper.py: runners create no process, the helper runs Triton's ptxas for it),
whose socket the runner gets as fd 4, and kills the helper's group when it reaps the runner.

In the child, before any candidate code: a new session, an unprivileged user (when the judge is
root: a user of its own; a runner that stays root loses every capability once warm), the parent-death signal
(then a re-check that the zygote is still the parent), stdin from /dev/null, the pipes as stdout and
stderr, every other descriptor closed, no core files, a file-size limit. Once warm, the runner
confines its writes to its directory (landlock.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import resource
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
from pathlib import Path

from tritongym.evaluate import numerics
from tritongym.evaluate.judge import compiler_helper, work_queues
from tritongym.evaluate.judge.reaping import kill_trees

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
CAPABILITY_VERSION_3 = 0x20080522
EVENT = struct.Struct("<cii")
REQUEST = struct.Struct("<cIH")
"""A fork request: ``f``, the user id the runner runs as (0: the zygote's own) and the hardware work
queues of its CUDA context (work_queues.py; 0: the zygote's environment, the judge's), with the runner's
four descriptors; or ``w``, a CUDA compute capability (e.g. 90) and 0, without descriptors: warm
Triton's compiler for that target (compiler_warmth.py)."""

FILE_SIZE_LIMIT = 256 << 20

_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def die_with_parent(parent: int) -> None:
    """SIGKILL when the parent dies; if it already has, go now (the signal was armed too late)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(70)


def runners_unprivileged(device: str) -> bool:
    """Whether runners run as unprivileged users of their own (reaping.py): only when the judge is
    root, and then by default on the CPU; ``TRITONGYM_RUNNER_USER=same`` keeps the judge's user there
    too. A GPU runner always keeps it: CUDA's inter-process handles do not open across users (the
    sandbox refuses ``own`` on a GPU), and its seccomp filter confines its signals instead."""
    if os.geteuid() != 0:
        return False
    choice = os.environ.get("TRITONGYM_RUNNER_USER", "")
    return device == "cpu" and choice != "same"


def drop_privileges(uid: int) -> None:
    """A judge running as root hands each runner to an unprivileged user: it cannot then signal,
    trace or read the judge, the zygote, the pool (all root) or the spare (the other user), nor open
    their /proc entries. Its Triton cache and scratch directory are its user's own."""
    if uid:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        home = Path(os.environ["TRITONGYM_RUNNERS_HOME"]) / f"runner-{uid}"
        os.environ["TRITON_CACHE_DIR"] = str(home / "triton")
        os.environ["TMPDIR"] = os.environ["HOME"] = str(home / "tmp")
        tempfile.tempdir = None  # the zygote's choice, made as root, is not this user's to write in
        os.environ["USER"] = os.environ["LOGNAME"] = f"runner-{uid}"  # no passwd entry: getpass asks these


def drop_capabilities() -> None:
    """A runner that keeps the root user (the judge's, as on a GPU by default) gives up every
    capability, for itself and for whatever it executes: without CAP_SYS_PTRACE it cannot read or
    trace the judge (non-dumpable) through /proc, without CAP_DAC_OVERRIDE it reads files only as
    their permissions allow. It still runs as uid 0 (device files, CUDA IPC and the judge's files
    work as before) and can still signal processes of that user (environment.md, threat model)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)  # every runner: no setuid program run later gains a privilege
    if os.geteuid() != 0:
        return
    try:
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):  # the bounding set first: an execve cannot bring any back
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"dropping capability {cap} from the bounding set failed")
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: none, in both 32-bit words
    if _libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


CLONE_NEWNET = 0x40000000


def isolate_network(device: str) -> None:
    """A CPU runner forked by a root zygote gets a network namespace of its own, with nothing in it
    (not even a loopback that is up): no service of the host (a model server, Ray, the tritongym
    service) and nothing outside is reachable. GPU runners keep the host's network until CUDA's
    inter-process handles are verified across namespaces; a judge that is not root cannot make one."""
    if device == "cpu" and os.geteuid() == 0 and _libc.unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "a network namespace for the runner could not be made")


def _become_runner(
    sock_fd: int,
    out_fd: int,
    err_fd: int,
    dir_fd: int,
    zygote: int,
    device: str,
    uid: int,
    tools_fd: int | None,
    queues: int = 0,
) -> None:
    directory = os.readlink(f"/proc/self/fd/{dir_fd}")  # the judge made it: its path, not a runner's word
    os.environ.update(work_queues.runner_env(queues, device))  # before its CUDA context exists (runner.serve)
    os.setsid()
    isolate_network(device)
    drop_privileges(uid)
    die_with_parent(zygote)  # after the change of user, which clears the parent-death signal
    prctl(PR_SET_CHILD_SUBREAPER, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    if tools_fd == 3:  # never, while the zygote's control socket holds 3: kept apart from the runner's socket
        tools_fd = os.dup(tools_fd)
    keep = os.dup2(sock_fd, 3) if sock_fd != 3 else 3
    tools = None
    if tools_fd is not None:  # fd 3 is taken: the helper's socket goes to 4
        tools = os.dup2(tools_fd, 4) if tools_fd != 4 else 4
    os.closerange(4 if tools is None else 5, 1 << 16)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    from tritongym.evaluate.judge import runner

    runner.serve(
        socket.socket(fileno=keep), zygote, device, directory, shares_judge_user=uid == 0,
        tools=None if tools is None else socket.socket(fileno=tools),
    )  # fmt: skip


def _reap(control: socket.socket, runners: set[int], helpers: dict[int, int]) -> None:
    """Reap every child that ended; a runner's is reported, and its compiler helper killed (with
    whatever the helper runs: it leads a group of its own)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in runners:
            runners.discard(pid)
            helper = helpers.pop(pid, None)
            if helper is not None:
                with contextlib.suppress(OSError):
                    os.killpg(helper, signal.SIGKILL)
            control.sendall(EVENT.pack(b"X", pid, status))
        else:  # a helper that ended before its runner: never signal its (reusable) pid again
            for runner, helper in list(helpers.items()):
                if helper == pid:
                    del helpers[runner]


def _kill_orphans(runners: set[int], helpers: dict[int, int]) -> None:
    """Processes reparented to us (a runner's descendants whose runner or parent died, or what a
    compiler helper ran when it died) have no business: each is killed with everything it started
    (stopped first, so that none forks on). Runners and their live helpers are ours."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as fh:
            children = fh.read().split()
    except OSError:
        return
    ours = runners | set(helpers.values())
    orphans = [pid for pid in map(int, children) if pid not in ours]
    if orphans:
        kill_trees(orphans)


def warm(capability: int) -> None:
    """Warm Triton's compiler for this compute capability. LLVM aborts the process on a target it
    cannot lower for, so a child tries first; only if it compiled does the zygote. A failure leaves
    the compiler cold, never the zygote dead."""
    from tritongym.evaluate.judge.compiler_warmth import warm_compiler

    scratch = tempfile.mkdtemp(prefix="tritongym-warm-probe-")  # what an aborted child leaves, removed here
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            tempfile.tempdir = scratch
            warm_compiler(capability)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    if status != 0:
        logging.getLogger(__name__).warning("Triton cannot compile for sm_%d: runners compile cold", capability)
        return
    with contextlib.suppress(Exception):  # the child compiled the same: nothing is expected here
        warm_compiler(capability)
    settle_heap()


def settle_heap() -> None:
    """Collect the zygote's garbage, then freeze what is left, before it forks runners. A compiler
    context (MLIR's, with its thread pool) left in a reference cycle by the warm-up would otherwise
    be collected in a runner, where its threads do not exist: LLVM aborts the runner at the join
    ("pthread_join failed: Invalid argument", seen with Triton 3.5 under the interpreter), whenever
    the runner's collector happens to run. Frozen objects are never collected in the children (nor
    their pages touched by the collector). The judge settles its own heap too once it started (about
    190,000 objects: torch, Triton, its own modules): the full collection after every job
    (memory.release) and Python's automatic ones then walk only what jobs made since, where each
    walked them all (about 0.1 s a collection on a 2-core CPU machine, the judge's own time between
    jobs and inside its stages)."""
    gc.collect()
    gc.freeze()


def main() -> None:
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])


def serve(control_fd: int, parent: int, device: str) -> None:
    """The zygote's life (never returns)."""
    die_with_parent(parent)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_DUMPABLE, 0)  # an unprivileged runner cannot ptrace or read the zygote's memory
    import numpy  # noqa: F401
    import torch
    import triton
    import triton.language

    torch.set_num_threads(1)
    numerics.library_precision()  # inherited by every runner, before the taint baseline is taken
    import triton.compiler.compiler

    with contextlib.suppress(ImportError):
        import triton.backends.nvidia.compiler
    if os.environ.get("TRITON_INTERPRET") == "1":
        import triton.runtime.interpreter
    from tritongym.evaluate.judge import runner

    runner.exercise_guards(witness=device == "cpu")
    from tritongym.evaluate import torch_library

    torch_library.install()  # triton_op and wrap_triton as an eager call runs them, with no dispatcher
    if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter's first launch sets up lazily
        from tritongym.evaluate.selftest import interpreter_problem

        interpreter_problem()
        from tritongym.evaluate import frontend

        frontend.warm()  # a runner's first kernel would pay for the frontend's setup
        from tritongym.evaluate import triton_compat

        triton_compat.interpreter_autotuning()  # several configs benchmarked without a GPU's driver
        triton_compat.interpreter_device()  # the tutorials' get_active_torch_device(): the device memory
        from tritongym.evaluate import interpreter_libdevice

        interpreter_libdevice.install()  # libdevice's math, which the interpreter runs none of
    import tritongym.evaluate.profiling
    import tritongym.evaluate.taint  # noqa: F401
    from tritongym.evaluate import frontend

    # the libraries' code as loaded, taken once for every runner: what a kernel may call without owning
    # it (a module a runner imports later is checked against its file, frontend.library_function)
    frontend.library_code()

    tools = compiler_helper.compiler_tools() if device != "cpu" else {}  # ptxas --version once, cached
    assert not torch.cuda.is_initialized(), "the zygote must not initialise CUDA"
    del triton
    settle_heap()
    control = socket.socket(fileno=control_fd)
    me = os.getpid()
    runners: set[int] = set()
    helpers: dict[int, int] = {}
    """A GPU runner's compiler helper (compiler_helper.py), by the runner's pid."""
    control.sendall(EVENT.pack(b"R", me, 0))
    while True:
        ready, _, _ = select.select([control], [], [], 0.2)
        _reap(control, runners, helpers)
        _kill_orphans(runners, helpers)
        if not ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, REQUEST.size, 4)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)  # the judge is gone
        if message[:1] == b"w" and not fds and len(message) == REQUEST.size:
            warm(REQUEST.unpack(message)[1])
            continue
        if len(fds) != 4 or len(message) != REQUEST.size:
            for fd in fds:
                os.close(fd)
            continue
        _, uid, queues = REQUEST.unpack(message)
        helper, tools_sock = None, None
        if device != "cpu":  # its runner creates no process: the helper runs Triton's assembler for it
            helper, tools_sock = compiler_helper.start(fds[3], me, tools, log_fd=fds[2])
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                tools_fd = None if tools_sock is None else tools_sock.fileno()
                _become_runner(*fds, zygote=me, device=device, uid=uid, tools_fd=tools_fd, queues=queues)
            finally:
                os._exit(71)
        for fd in fds:
            os.close(fd)
        if tools_sock is not None:
            tools_sock.close()
            helpers[pid] = helper
        runners.add(pid)
        control.sendall(EVENT.pack(b"F", pid, helper or 0))  # the judge counts its tools' memory as the runner's


if __name__ == "__main__":
    main()
