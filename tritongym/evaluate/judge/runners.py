"""The judge's side of its runners: the zygote process, spare runners forked ahead, and the handle
through which the judge talks to, watches and kills the one running the current candidate."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.gpu_memory import tree_gpu_bytes
from tritongym.evaluate.judge.reaping import kill_trees, kill_user, runner_uids
from tritongym.evaluate.judge.work_queues import fits
from tritongym.evaluate.judge.zygote import EVENT, REQUEST, runners_unprivileged


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and torch.cuda.is_initialized()


START_TIMEOUT_S = 300.0
"""Importing torch and Triton (zygote) or creating a CUDA context (runner): a stuck start, not longer."""
KEEP_OUTPUT_BYTES = 1 << 20
"""Output of a runner kept before the job's own limit applies."""
PING_TIMEOUT_S = 2.0
"""A spare that does not answer a ping this fast is replaced (it may have been stopped)."""


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found += [int(x) for x in (task / "children").read_text().split()]
    return found


SHARED_MEMORY = "/dev/shm"


def tree_pids(pid: int, limit: int = 4096) -> list[int]:
    """A process and its descendants (read from /proc: a few files, not a scan of every process)."""
    todo, seen = [pid], []
    while todo and len(seen) < limit:
        current = todo.pop()
        if current in seen:
            continue
        seen.append(current)
        todo += _children(current)
    return seen


def _cpu_ticks(pid: int) -> int:
    """A process's CPU time (all its threads) and its reaped children's, in clock ticks; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    except (OSError, IndexError, ValueError):
        return 0


def tree_cpu_seconds(pid: int, helper: int = 0) -> float:
    """The CPU time of a runner's processes: every thread of each, and the children each reaped. With
    ``helper`` (a GPU runner's compiler helper) the tools it ran count too (the helper's reaped
    children and those still running), not the helper's own time: it serves, the tools compute what
    the runner asked for (red team 6: their CPU time was nobody's)."""
    ticks = sum(_cpu_ticks(p) for p in tree_pids(pid))
    if helper:
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{helper}/stat", "rb") as fh:
            ticks += sum(int(x) for x in fh.read().rsplit(b")", 1)[1].split()[13:15])  # cutime, cstime
        ticks += sum(_cpu_ticks(p) for p in tree_pids(helper)[1:])
    return ticks / _TICKS_PER_S


_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def start_time(pid: int) -> int | None:
    """When a process started (clock ticks since boot), None where it is gone: with its pid, it names
    one process for good."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def tree_memory_bytes(pid: int, uid: int = 0, helper: int = 0, directory: str = "") -> int:
    """Host memory a runner's processes hold: their resident sets less the shared-memory pages in them,
    plus every file object that only they keep (``held_files``: memfds, /dev/shm files, shared anonymous
    memory, files they unlinked, whether held by a descriptor or a mapping: pages or blocks that no
    resident set shows, or shows as shared), plus, for a runner with a user of its own, that user's
    files in /dev/shm. ``helper``: the runner's compiler helper (compiler_helper.py), whose tools (not
    the helper itself: a fork of the zygote's) count as the runner's, since they run what the runner
    asks (red team 6 #1). ``directory``: the runner's own, whose files count too (``directory_bytes``:
    red team 7 #5)."""
    page, total, files = os.sysconf("SC_PAGE_SIZE"), 0, {}
    pids = tree_pids(pid) + (tree_pids(helper)[1:] if helper else [])
    for current in pids:
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{current}/statm", "rb") as fh:
            total += int(fh.read().split()[1]) * page
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{current}/status", "rb") as fh:
            shmem = next((line for line in fh if line.startswith(b"RssShmem:")), b"RssShmem: 0 kB")
            total -= int(shmem.split()[1]) * 1024
        held_files(current, files)
    if uid:
        for st in _user_files(SHARED_MEMORY, uid):
            files[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    held = directory_bytes(directory, files) if directory else 0
    return max(total, 0) + sum(files.values()) + held


def _held(target: str) -> bool:
    """Whether a descriptor's or a mapping's object is one that only its holders keep, or shared
    memory: a memfd, a /dev/shm file, SysV shared memory, shared anonymous memory (``/dev/zero
    (deleted)``), any file unlinked while held (red team 8 #1, #2)."""
    return target.startswith(("/memfd:", SHARED_MEMORY + "/", "/SYSV")) or target.endswith(" (deleted)")


def held_files(pid: int, files: dict) -> None:
    """Add to ``files`` ((device, inode) -> allocated bytes) the objects of ``_held`` a process holds by
    a descriptor or by a mapping (a descriptor closed after ``mmap`` keeps the object; a shared
    anonymous mapping has none). A mapping whose object cannot be read (``map_files`` needs the
    judge's privilege) counts its resident size, from ``smaps``."""
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = f"/proc/{pid}/fd/{fd}"
            with contextlib.suppress(OSError):
                if _held(os.readlink(link)):
                    st = os.stat(link)
                    if stat.S_ISREG(st.st_mode):
                        files[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    unread = set()
    with contextlib.suppress(OSError), open(f"/proc/{pid}/maps", "rb") as fh:
        for line in fh:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or not _held(fields[5].rstrip(b"\n").decode(errors="replace")):
                continue
            try:
                st = os.stat(f"/proc/{pid}/map_files/{fields[0].decode()}")
                files[(st.st_dev, st.st_ino)] = st.st_blocks * 512
            except OSError:
                unread.add(fields[0])
    if unread:
        _resident_of(pid, unread, files)


def _resident_of(pid: int, ranges: set, files: dict) -> None:
    """The resident bytes of the mappings ``ranges`` (``start-end``) of a process, from its ``smaps``,
    each under its (device, inode) in ``files`` (the largest where one object is mapped twice)."""
    key = None
    with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/smaps", "rb") as fh:
        for line in fh:
            fields = line.split()
            if fields and b"-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(b":"):
                major, minor = (int(x, 16) for x in fields[3].split(b":"))
                key = (os.makedev(major, minor), int(fields[4])) if fields[0] in ranges else None
            elif key is not None and fields[0] == b"Rss:":
                files[key] = max(files.get(key, 0), int(fields[1]) * 1024)


MAX_DIRECTORY_ENTRIES = 10000
"""Entries of a runner's directory the memory measure reads (Triton's cache keeps a few files per
compiled kernel: an honest job has tens); a directory with more is over every limit."""


def directory_bytes(directory: str, seen: dict | None = None) -> int:
    """Space the files below a runner's directory hold (allocated blocks, each file once however many
    links it has; ``seen``: files already counted, by device and inode). The runner may write there
    only, as much as it likes (each file up to its file-size limit): RAM where the sandbox's home is a
    tmpfs, else disk that the concurrent jobs need, until the job ends (red team 7 #5). A directory
    of more than MAX_DIRECTORY_ENTRIES entries is not read further: it counts as 2**62 bytes."""
    seen = {} if seen is None else seen
    entries = _entries(directory, MAX_DIRECTORY_ENTRIES + 1)
    if len(entries) > MAX_DIRECTORY_ENTRIES:
        return 1 << 62
    held = 0
    for entry in entries:
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if (st.st_dev, st.st_ino) not in seen:
                seen[(st.st_dev, st.st_ino)] = 0
                held += st.st_blocks * 512
    return held


def _entries(top: str, limit: int = 10000) -> list[os.DirEntry]:
    """Entries below ``top``, deepest first, at most ``limit`` (an explicit stack: a chain of nested
    directories cannot exhaust the judge's recursion)."""
    found: list[os.DirEntry] = []
    todo = [top]
    while todo and len(found) < limit:
        with contextlib.suppress(OSError), os.scandir(todo.pop()) as listing:
            for entry in listing:
                found.append(entry)
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
    return found[::-1]


def _user_files(top: str, uid: int):
    """stat results of the regular files below ``top`` owned by ``uid``."""
    for entry in _entries(top):
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if st.st_uid == uid and stat.S_ISREG(st.st_mode):
                yield st


SCRATCH_DIRS = ("/tmp", "/var/tmp")
"""World-writable directories where a runner of its own user can leave files outside its job's."""


def remove_user_entries(top: str, uid: int) -> None:
    """Remove what a runner's own user made at the top of a world-writable directory, with everything
    below it (files there would outlive the job, and pile up job after job)."""
    from tritongym.evaluate.sandbox import remove_tree

    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                remove_tree(Path(entry.path))
            else:
                os.unlink(entry.path)


def remove_user_files(top: str, uid: int) -> None:
    """Remove what a runner's own user left in a shared directory (its memory would outlive the job)."""
    for entry in _entries(top):  # deepest first: a directory is empty when its turn comes
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_uid == uid:
                if entry.is_dir(follow_symlinks=False):
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)


class RunnerLost(Exception):
    """A runner or the zygote failed before any candidate code ran in it: not the candidate's fault."""


class _Drain(threading.Thread):
    """Reads a runner's stdout or stderr to EOF, keeping the first bytes and counting the rest."""

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd, self.kept, self.dropped = fd, bytearray(), 0
        self.start()

    def run(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(self.fd, 65536):
                room = max(KEEP_OUTPUT_BYTES - len(self.kept), 0)
                self.kept += chunk[:room]
                self.dropped += max(len(chunk) - room, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def text(self, limit: int, wait_s: float) -> str:
        self.join(wait_s)  # a process the runner left behind may hold the pipe open: do not wait for it
        kept = bytes(self.kept)
        dropped = self.dropped + max(len(kept) - limit, 0)
        text = kept[:limit].decode("utf-8", errors="replace")
        return text + (f"\n[... {dropped} more bytes dropped]" if dropped else "")


class _Forked:
    """A child forked by the judge, with the part of Popen's interface the zygote handle uses."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


def _fork_zygote(theirs: socket.socket, device: str, env: dict[str, str]) -> _Forked:
    """The zygote as a fork of this judge at its start (CUDA-free, job-free): it shares the judge's
    imports. A zygote started again later is a fresh executable (``Zygote.launch``)."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(theirs.fileno(), 3)
            os.closerange(4, 1 << 16)
            os.environ.clear()
            os.environ.update(env)
            from tritongym.evaluate.judge import zygote

            zygote.serve(3, parent, device)
        finally:
            os._exit(72)
    return _Forked(pid)


class Zygote:
    """The zygote process (zygote.py) and the events it reports."""

    def __init__(self, device: str, env: dict[str, str], cwd: str):
        self.device, self.env, self.cwd = device, env, cwd
        self.proc: subprocess.Popen | _Forked | None = None
        self.statuses: dict[int, int] = {}
        self.starts = 0
        self.capability = 0
        """The GPU's compute capability (e.g. 90) once the judge knows it: every zygote started
        warms Triton's compiler for it before it forks a runner (compiler_warmth.py)."""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.launch()
        self.wait_started()

    def launch(self) -> None:
        """Start the process (it imports torch and Triton while the caller does other work)."""
        self.close()
        ours, theirs = socket.socketpair()
        try:
            if self.starts == 0 and not _cuda_initialized():  # the judge is still job-free
                self.proc = _fork_zygote(theirs, self.device, self.env)
            else:  # a fresh executable: a fork now would carry the judge's job (its stack) or CUDA context
                self.proc = subprocess.Popen(
                [sys.executable, "-s", "-P", "-m", "tritongym.evaluate.judge.zygote", str(theirs.fileno()),
                 str(os.getpid()), self.device],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    env=self.env,
                    cwd=self.cwd,
                )  # fmt: skip
        finally:
            theirs.close()
        self.control = ours
        self.starts += 1

    def wait_started(self) -> None:
        kind, _, _ = self._event(time.monotonic() + START_TIMEOUT_S)
        if kind != b"R":
            raise RunnerLost("the zygote did not start")
        if self.capability:
            self._send_warm()

    def warm(self, capability: int) -> None:
        """Have the zygote, started (``wait_started``), warm Triton's compiler for this compute
        capability before its next fork; a zygote started again later does the same."""
        self.capability = capability
        self._send_warm()

    def _send_warm(self) -> None:
        with contextlib.suppress(OSError):  # a zygote gone is found out, and replaced, at the next fork
            self.control.sendall(REQUEST.pack(b"w", self.capability, 0))

    def _event(self, deadline: float) -> tuple[bytes, int, int]:
        data = b""
        while len(data) < EVENT.size:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([self.control], [], [], wait)[0]:
                return b"", 0, 0
            chunk = self.control.recv(EVENT.size - len(data))
            if not chunk:
                return b"", 0, 0
            data += chunk
        kind, pid, status = EVENT.unpack(data)
        if kind == b"X":
            self.statuses[pid] = status
        return kind, pid, status

    def fork(self, fds: list[int], uid: int, queues: int = 0) -> tuple[int, int]:
        """A new runner's pid and its compiler helper's (0: none, a CPU runner's); its descriptors (socket,
        stdout, stderr and its directory) are passed to the zygote, which forks it to run as ``uid`` (0:
        the zygote's own user), its CUDA context with ``queues`` hardware work queues (0: the zygote's
        environment's, the judge's; work_queues.py)."""
        if not self.alive:
            self.start()
        try:
            socket.send_fds(self.control, [REQUEST.pack(b"f", uid, queues)], fds)
        except OSError as exc:
            raise RunnerLost(f"the zygote is gone ({exc})") from None
        deadline = time.monotonic() + 30.0
        while True:
            kind, pid, helper = self._event(deadline)
            if kind == b"F":
                return pid, helper
            if kind == b"":
                raise RunnerLost("the zygote did not fork a runner")

    def exit_status(self, pid: int, wait_s: float) -> int | None:
        """The runner's wait status as the zygote reaped it, waiting up to ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while pid not in self.statuses:
            if self._event(deadline)[0] == b"":
                break
        return self.statuses.pop(pid, None)

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
            self.control.close()
            self.proc = None


class RunnerHandle:
    """One runner as the judge sees it, and its directory: the only one it may write in (landlock.py),
    its job's when it gets one, removed when it is killed."""

    def __init__(self, zygote: Zygote, jobs: Path, uid: int = 0, queues: int = 0):
        self.zygote, self.uid = zygote, uid
        self.queues = queues
        """The hardware work queues of its CUDA context (work_queues.py; 0: the judge's setting)."""
        self.directory = Path(tempfile.mkdtemp(prefix="runner-", dir=jobs))
        if uid:
            os.chown(self.directory, uid, uid)
        self.sock, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        directory = os.open(self.directory, os.O_PATH | os.O_DIRECTORY)
        self.forked = time.monotonic()
        """When the judge asked for it (the machine's clock, as the runner's Hello reports its start)."""
        self.start_seconds: dict[str, float] = {}
        """Its start split in parts, once it said Hello (``start_parts``)."""
        try:
            self.pid, helper = zygote.fork([theirs.fileno(), out_w, err_w, directory], uid, queues)
        except BaseException:
            self._remove_directory()
            raise
        finally:
            for fd in (theirs.detach(), out_w, err_w, directory):
                os.close(fd)
        self.stdout, self.stderr = _Drain(out_r), _Drain(err_r)
        self.ready = False
        self.memory_limit = 1 << 62
        self.gpu_limit = 1 << 62
        """The GPU memory it may hold (gpu_memory.runner_gpu_limit), once its job is known."""
        self.gpu_readings: Callable[[], dict[int, int | None] | None] | None = None
        """NVML's per-process reading of its GPU (gpu_memory.Nvml.processes), where NVML names this
        judge's pids; None: its GPU memory is not read while it runs."""
        self.cpu_limit_s = float("inf")
        """CPU seconds the runner's processes and its compiler helper's tools may use together
        (``tree_cpu_seconds``); the runner's own ``RLIMIT_CPU`` stops it alone a little earlier."""
        self._next_memory_check = 0.0
        self.helper, self._helper_started = helper, start_time(helper) if helper else None
        """The runner's compiler helper (a GPU runner's), and when it started: a pid reused is no helper."""

    def _not_stopped(self) -> None:
        """Raises RunnerLost if the runner is stopped (a candidate of the same user may stop a spare
        before it said Hello: waiting for it would cost the next job its whole timeout)."""
        with contextlib.suppress(OSError, IndexError), open(f"/proc/{self.pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t"):
                raise RunnerLost("a spare runner was stopped")

    def wait_ready(self, deadline: float) -> None:
        try:
            hello = p.receive(self.sock, (p.Hello,), deadline, 0, self._not_stopped)
        except (p.PeerGone, p.Deadline, p.ProtocolError, OSError) as exc:
            self.kill()
            said = self.stderr.text(2000, 1.0).strip()
            raise RunnerLost(f"a runner did not start ({type(exc).__name__})" + (f": {said}" if said else "")) from None
        if hello.pid != self.pid:
            raise RunnerLost("a runner announced the wrong pid")
        self.start_seconds = start_parts(self.forked, hello.started)
        self.ready = True

    def _tick(self) -> None:
        now = time.monotonic()
        if now >= self._next_memory_check:
            self._next_memory_check = now + 0.1
            helper = self.helper if self.helper and start_time(self.helper) == self._helper_started else 0
            if tree_memory_bytes(self.pid, self.uid, helper, str(self.directory)) > self.memory_limit:
                raise OutOfMemory()
            if tree_cpu_seconds(self.pid, helper) > self.cpu_limit_s:
                raise CpuTimeExceeded()
            self.check_gpu()

    def cpu_seconds(self) -> float:
        """CPU time of the runner's processes and its compiler helper's tools so far."""
        helper = self.helper if self.helper and start_time(self.helper) == self._helper_started else 0
        return tree_cpu_seconds(self.pid, helper)

    def gpu_bytes(self) -> int | None:
        """GPU memory its processes hold, as NVML reports them (gpu_memory.tree_gpu_bytes); None
        where it is not read (``gpu_readings``) or NVML could not tell."""
        readings = self.gpu_readings() if self.gpu_readings is not None else None
        return None if readings is None else tree_gpu_bytes(readings, tree_pids(self.pid))

    def check_gpu(self) -> None:
        """Raises OutOfMemory if its processes hold more GPU memory than ``gpu_limit``."""
        used = self.gpu_bytes()
        if used is not None and used > self.gpu_limit:
            raise OutOfMemory(gpu_bytes=used)

    def send(self, message: p.Message, deadline: float = float("inf")) -> None:
        """Write a message to the runner, waiting no longer than ``deadline`` for it to read."""
        try:
            p.send(self.sock, message, deadline, self._tick)
        except OSError as exc:
            raise p.PeerGone() from exc

    def receive(self, expect: tuple[type, ...], deadline: float, max_payload: int) -> p.Message:
        return p.receive(self.sock, expect, deadline, max_payload, self._tick)

    def children(self) -> list[int]:
        """Processes the runner started that still exist (read from /proc: not the runner's word)."""
        return _children(self.pid)

    def exit_description(self) -> str:
        """How the runner ended ('signal SIGSEGV', 'exit code 3'), after it closed its socket."""
        status = self.zygote.exit_status(self.pid, 2.0)
        if status is None:
            return "it closed its channel"
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                return f"signal {signal.Signals(sig).name}"
            except ValueError:
                return f"signal {sig}"
        return f"exit code {os.WEXITSTATUS(status)}"

    def ping(self, timeout_s: float) -> None:
        """A round trip: raises RunnerLost if the runner does not answer in time."""
        try:
            self.send(p.Ping(), time.monotonic() + timeout_s)
            self.receive((p.Pong,), time.monotonic() + timeout_s, 0)
        except (p.PeerGone, p.Deadline, p.ProtocolError, OSError) as exc:
            raise RunnerLost(f"a spare runner did not answer ({type(exc).__name__})") from None

    def kill(self) -> None:
        """Kill the runner and everything it started: every process of its own user when it has one
        (reaping.py), else its process tree and its session's group; remove its directory."""
        self.kill_processes()
        self.sock.close()
        self._remove_directory()

    def kill_processes(self) -> None:
        """Kill the runner's processes (``kill``), leaving its directory and socket to the judge."""
        if self.uid:
            kill_user(self.uid)
            remove_user_files(SHARED_MEMORY, self.uid)
            for top in SCRATCH_DIRS:
                remove_user_entries(top, self.uid)
        else:
            kill_trees([self.pid])
        for target in (-self.pid, self.pid):  # its session's group, then itself if it never got one
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGKILL)

    def _remove_directory(self) -> None:
        from tritongym.evaluate.sandbox import remove_tree

        remove_tree(self.directory)


START_PARTS = ("serve", "context", "warm", "hardened")
"""A runner's start, part by part (protocol.Hello's ``started``): the fork until it runs its own code,
its CUDA context (with a first allocation and launch), Triton's driver and the op witness's profiler,
then its hardening until Hello."""


def start_parts(forked: float, started: dict[str, float]) -> dict[str, float]:
    """Seconds each part of a runner's start took (``runner_start_<part>``) and the whole
    (``runner_start``), from when the judge forked it (``forked``) and the times its Hello reports
    (a part it does not report, the context on the CPU, is left out). Statistics only: each is
    bounded to [0, 600] s, whatever a runner reports."""
    parts, last = {}, forked
    for name in START_PARTS:
        when = started.get(name)
        if when is not None:
            parts[f"runner_start_{name}"] = round(min(max(when - last, 0.0), 600.0), 4)
            last = max(when, last)
    if parts:
        parts["runner_start"] = round(min(last - forked, 600.0), 4)
    return parts


class OutOfMemory(Exception):
    """The runner's processes use more memory than the job allows: host memory, or with
    ``gpu_bytes`` (what they held) GPU memory."""

    def __init__(self, gpu_bytes: int = 0):
        super().__init__()
        self.gpu_bytes = gpu_bytes


class CpuTimeExceeded(Exception):
    """The runner's processes and its compiler helper's tools used more CPU time than the job allows."""


class RunnerSupply:
    """Runners forked ahead, so that no job waits for one: the next job's runner is forked as soon
    as this job's is taken, and warms up (its CUDA context) while this one runs. A spare holds
    nothing of any job and is non-dumpable. Under a root judge the running runner and the spare run
    as two different unprivileged users (reaping.py), so that no candidate can signal the next job's
    runner; in any case a spare must answer a ping before it is given a job."""

    def __init__(self, device: str, env: dict[str, str], cwd: str, jobs: Path):
        self.zygote = Zygote(device, env, cwd)
        self.jobs = jobs
        """Where each runner's directory is made (nothing of the judge's is in it)."""
        self.spare: RunnerHandle | None = None
        self.forks = 0
        self.uids = runner_uids(os.getpid()) if runners_unprivileged(device) else (0, 0)
        self.taken_uid = self.uids[1]
        """The user of the last runner taken; the spare gets the other one."""

    def _other(self, uid: int) -> int:
        return self.uids[0] if uid == self.uids[1] else self.uids[1]

    def launch(self) -> None:
        self.zygote.launch()

    def start(self) -> None:
        """Wait for the zygote that ``launch`` started, and fork the first spare."""
        self.zygote.wait_started()
        self.replenish()

    def replenish(self, queues: int = 0) -> None:
        """Fork a spare (if there is none) whose CUDA context gets ``queues`` work queues."""
        if self.spare is None:
            with contextlib.suppress(RunnerLost):
                self.spare = RunnerHandle(self.zygote, self.jobs, self._other(self.taken_uid), queues)
                self.forks += 1

    def unfit_spare(self, queues: int) -> RunnerHandle | None:
        """The spare, given up by the supply, where it may not run a job that needs ``queues`` work
        queues (work_queues.fits); the caller kills it. None where it may, or there is none."""
        spare = self.spare
        if spare is None or fits(spare.queues, queues):
            return None
        self.spare = None
        return spare

    def take(self, deadline: float, attempts: int = 3, queues: int = 0) -> RunnerHandle:
        """A runner that said Hello and answers a ping: the spare, else one forked now with ``queues``
        work queues (the caller let go a spare that does not fit: ``unfit_spare``). Raises RunnerLost
        after ``attempts`` failures (a spare that fails is replaced by a fresh runner of the same
        user, once every process of that user is gone)."""
        why = ""
        uid = self._other(self.taken_uid)
        for _ in range(attempts):
            runner, self.spare = self.spare, None
            try:
                if runner is None:
                    runner = RunnerHandle(self.zygote, self.jobs, uid, queues)
                    self.forks += 1
                uid = runner.uid
                runner.wait_ready(deadline)
                runner.ping(min(PING_TIMEOUT_S, max(deadline - time.monotonic(), 0.0)))
                self.taken_uid = runner.uid
                return runner
            except RunnerLost as exc:
                why = str(exc)
                if runner is not None:
                    runner.kill()
                if not self.zygote.alive:
                    with contextlib.suppress(RunnerLost):
                        self.zygote.start()
        raise RunnerLost(why)

    def close(self) -> None:
        if self.spare is not None:
            self.spare.kill()
            self.spare = None
        self.zygote.close()
