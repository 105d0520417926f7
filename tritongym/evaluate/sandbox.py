"""A warm sandbox: one judge process (tritongym.evaluate.judge) that evaluates candidates one after
another, each in a runner of its own that the judge forks and kills.

The caller keeps a backstop on the judge: a wall-clock deadline per job (the judge enforces the
job's own timeout on its runner; this one catches a stuck judge), a memory watchdog, its own session
and parent-death signal (so it and its runners die with the caller), a private directory per
job (the candidate's file, which the judge reads and copies into its runner's own directory), and an
allowlisted environment. A judge that dies or breaks its protocol is killed; the next
job starts a fresh one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import tritongym
from tritongym.errors import ConfigError, SandboxError

logger = logging.getLogger(__name__)

MAX_CHANNEL_BYTES = 64 << 20
"""A judge never says more than this per job."""
JUDGE_MEMORY_FACTOR = 4
"""The judge's own process group (judge and zygote) may use this many times the job's memory limit."""
BACKSTOP_S = 20.0
"""Seconds past the job's timeout after which a judge that has not answered is killed."""
BEFORE_CANDIDATE = ("start", "reference")
"""Stages that run no candidate code: a failure there is the infrastructure's, not the candidate's."""
START_TIMEOUT_S = 300.0
"""Importing torch and triton and creating a CUDA context takes seconds; a stuck start, not longer."""

_PASSTHROUGH_ENV = (
    "PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CC",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
    "TRITONGYM_RUNNER_USER", "TRITONGYM_RUNNER_LANDLOCK",
)  # fmt: skip


CAP_DAC_OVERRIDE = 1


def overrides_permissions() -> bool:
    """Whether this process passes every file's permission bits (CAP_DAC_OVERRIDE in its effective set:
    root as a pool and its judges normally run, not a runner, which keeps uid 0 without capabilities)."""
    try:
        with open("/proc/self/status") as fh:
            effective = next(line for line in fh if line.startswith("CapEff:"))
        return bool(int(effective.split()[1], 16) >> CAP_DAC_OVERRIDE & 1)
    except (OSError, StopIteration, ValueError, IndexError):
        return False


def private_lock_dir(base: Path) -> Path:
    """The directory of the GPU timing locks where they are files (off x86-64 Linux: on it they are
    System V semaphores no runner reaches, judge/machine_lock.py), shared by every sandbox of this user
    on the machine and writable by nobody else (a runner that created the lock file first could hold
    the lock). Where this process passes permission bits (root), its mode is 000: only such a process
    (a judge) opens a lock in it. A runner that keeps uid 0 without capabilities (every GPU runner)
    would otherwise pass the owner's bits, and ``flock`` needs only a descriptor opened for reading,
    which Landlock allows: it could hold every judge's lock of the machine (red team 5 #2)."""
    path = base / f"tritongym-locks-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise SandboxError(f"{path} is not a directory that only this user may write; remove it")
    if os.geteuid() == 0 and overrides_permissions() and info.st_mode & 0o777:
        os.chmod(path, 0)
    return path


LAUNCHER_STORE_ENV = "TRITONGYM_LAUNCHER_STORE"
"""Where the judges keep the launcher store (judge/launcher_builder.py): a directory, or ``off``."""


def launcher_store_root(device: str) -> Path | None:
    """The launcher store's root: ``TRITONGYM_LAUNCHER_STORE`` (``off``: none), else
    ``~/.cache/tritongym/launchers`` of this user on a GPU and none on the CPU (the interpreter builds no
    C module). Outside every sandbox's home, so that it outlives the pool and is shared by the judges
    of this user on the machine; outside every runner's writable directories."""
    chosen = os.environ.get(LAUNCHER_STORE_ENV, "")
    if chosen == "off" or (not chosen and device == "cpu"):
        return None
    if chosen:
        return Path(chosen).absolute()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tritongym" / "launchers"


class _Tail(threading.Thread):
    """Drains one of the judge's own streams to EOF, keeping the last bytes (diagnostics only: the
    candidate's output comes back inside the judge's result)."""

    KEEP = 64 << 10

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.data = stream, b""

    def run(self) -> None:
        try:
            while chunk := self.stream.read1(65536):
                self.data = (self.data + chunk)[-self.KEEP :]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def remove_tree(path: Path) -> None:
    """Remove a directory whatever a candidate left in it, never raising: ``shutil.rmtree`` recurses
    once per level (a chain of thousands of nested directories raises RecursionError, which
    ``ignore_errors`` does not cover), so what it cannot remove goes to ``rm -rf``, which walks
    iteratively."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except Exception:  # RecursionError, OSError, anything a crafted tree makes it raise
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["rm", "-rf", "--", str(path)], timeout=120, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


HOME_PREFIX = "tritongym-sandbox-"
OWNER = "owner"
"""A sandbox home's file naming the process that made it: its pid and start time (``/proc``)."""


def process_identity(pid: int) -> str | None:
    """``"<pid> <start time>"`` of a live process (a recycled pid has another start time), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return f"{pid} {int(fields[19])}"  # field 22 of stat: starttime


def stale_homes(root: Path) -> list[Path]:
    """Sandbox homes under ``root`` whose maker is gone (killed before it could remove them: a pool
    ended by SIGKILL, a test timed out), with whatever their candidates left. A home without an
    owner file, one of another user's, or one whose owner is alive, is not stale."""
    stale = []
    for home in root.glob(HOME_PREFIX + "*"):
        try:
            if (home / OWNER).stat().st_uid != os.getuid():
                continue
            owner = (home / OWNER).read_text().strip()
            pid = int(owner.split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if process_identity(pid) != owner:
            stale.append(home)
    return stale


@functools.cache
def sweep_stale_homes(root: Path) -> int:
    """Remove :func:`stale_homes` under ``root`` (once per process and root); how many."""
    homes = stale_homes(root)
    for home in homes:
        remove_tree(home)
    if homes:
        logger.info("removed %d sandbox homes of processes that died without removing them", len(homes))
    return len(homes)


@dataclass
class SandboxOutcome:
    """What happened to one job in a sandbox."""

    result: dict | None = None
    """The judge's result payload, if it sent one."""
    stage: str = "start"
    """The last stage the judge announced for this job."""
    stages_seen: list[str] = field(default_factory=list)
    returncode: int | None = None
    """Exit status if the process ended during the job (negative: the signal)."""
    timed_out: bool = False
    out_of_memory: bool = False
    """The judge's own processes (judge and zygote; runners are watched by the judge) used more host
    memory than ``host_limit``: the judge's failure, never the candidate's."""
    host_limit: int = 0
    """What the judge's processes were allowed: the job's share, raised by the problem's own size
    once the judge has said it (``host_bytes``, memory.judge_host_bytes)."""
    protocol_error: str = ""
    judge_exposed: bool = True
    """Whether the candidate's runner could have killed the judge (same user): then a judge that
    dies once the candidate reached its runner is the candidate's doing."""
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    @property
    def lost(self) -> bool:
        """The judge ended through no fault of the candidate, so the job may be retried: before the
        candidate reached a runner, or at any time when runners run as another user than the judge.
        Otherwise a judge that dies once the candidate reached its runner is the candidate's crash
        (a runner of the same user can signal its judge: that must not buy a retry)."""
        return (
            self.result is None
            and not (self.timed_out or self.out_of_memory or self.protocol_error)
            and (all(stage in BEFORE_CANDIDATE for stage in self.stages_seen) or not self.judge_exposed)
        )


def sandbox_env(home: Path, interpret: bool, extra: dict[str, str]) -> dict[str, str]:
    """An allowlisted environment: nothing of the caller's (tokens, keys) reaches candidate code."""
    env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
    package_root = str(Path(tritongym.__file__).resolve().parent.parent)
    env |= {
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": package_root,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "TRITON_CACHE_DIR": str(home / ".triton"),
    }
    if interpret:
        env |= {"TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    return env | extra


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in a process group (Linux /proc)."""
    total, page = 0, os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields_ = fh.read().rsplit(b")", 1)[1].split()
            if int(fields_[2]) != pgid:
                continue
            with open(f"/proc/{entry.name}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total


class Sandbox:
    """One warm judge process for one device. Not thread-safe: one job at a time. The judge dies
    with the thread that started it (its parent-death signal): start and use it from one thread."""

    def __init__(self, device: str = "cpu", device_env: dict[str, str] | None = None):
        if device != "cpu" and os.environ.get("TRITONGYM_RUNNER_USER") == "own":
            raise ConfigError(
                "TRITONGYM_RUNNER_USER=own works on the CPU only: CUDA's inter-process memory and event "
                "handles, which the judge and a GPU runner share, do not open across users"
            )
        from tritongym.evaluate.judge.landlock import check_host
        from tritongym.evaluate.judge.zygote import runners_unprivileged

        check_host(shares_judge_user=not runners_unprivileged(device))
        self.device = device
        self.device_env = device_env or {}
        self.info: dict = {}
        """The judge's ``ready`` message: device name and versions."""
        self.starts = 0
        self._proc: subprocess.Popen | None = None
        self._home: Path | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The judge's process id (its process group's too), while it runs."""
        return self._proc.pid if self.alive else None

    def start(self) -> None:
        """Start the judge and wait until it has imported torch/triton, started its zygote and
        forked a spare runner (and, on a GPU, made its CUDA context)."""
        if self.alive:
            return
        self.close()
        sweep_stale_homes(Path(tempfile.gettempdir()))
        self._home = Path(tempfile.mkdtemp(prefix=HOME_PREFIX))
        self._home.chmod(0o711)  # runners may pass through to their job's directory, not list others
        (self._home / OWNER).write_text(process_identity(os.getpid()) or "")
        read_fd, write_fd = os.pipe()
        env = sandbox_env(self._home, interpret=self.device == "cpu", extra=self.device_env)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tritongym.evaluate.judge"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._home,
                env=env,
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            raise SandboxError(f"cannot start the sandbox process: {exc}") from exc
        finally:
            os.close(write_fd)
        self._channel = read_fd
        self._tails = [_Tail(self._proc.stdout), _Tail(self._proc.stderr)]
        for tail in self._tails:
            tail.start()
        self.starts += 1
        init = {"channel_fd": write_fd, "device": self.device, "home": str(self._home), "parent_pid": os.getpid()}
        init["lock_dir"] = str(private_lock_dir(Path(tempfile.gettempdir())))  # the GPU timing locks
        store = launcher_store_root(self.device)  # Triton's C modules, built by the judge for its runners
        init["launcher_store"] = str(store) if store is not None else ""
        ready = SandboxOutcome()
        with contextlib.suppress(OSError):
            self._send(init)
        self._watch(ready, time.monotonic() + START_TIMEOUT_S, memory_limit=1 << 62, until="ready")
        if not self.info:
            time.sleep(0.2)
            detail = self._tails[1].text()[-2000:]
            self.close()
            raise SandboxError(f"the sandbox process did not become ready: {ready.protocol_error or detail}")

    def close(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
            with contextlib.suppress(OSError):
                os.close(self._channel)
            self._proc = None
        if self._home is not None:
            remove_tree(self._home)
            self._home = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- jobs ----------------------------------------------------------------------------------

    def run(self, job: dict, timeout_s: float, memory_limit_bytes: int, output_limit_bytes: int) -> SandboxOutcome:
        """Run one job (``candidate_source`` is written to the job's private directory).
        Raises SandboxError only if a process cannot be started."""
        self.start()
        outcome = SandboxOutcome(judge_exposed=not self.info.get("runners_unprivileged", False))
        workdir = Path(tempfile.mkdtemp(prefix="job-", dir=self._home))
        nonce = secrets.token_hex(16)
        job = job | {"nonce": nonce, "candidate_path": str(workdir / "solution.py"),
                     "timeout_s": timeout_s, "output_limit_bytes": output_limit_bytes}  # fmt: skip
        (workdir / "solution.py").write_text(job.pop("candidate_source"), encoding="utf-8")
        start = time.monotonic()
        with contextlib.suppress(OSError):  # it died between jobs: the channel's EOF says so
            self._send(job)
        # The judge enforces the job's timeout and memory limit on its runner; these catch the judge. A job
        # with a second size may take its timeout once more (second_size.SecondSize.allowance); on a GPU,
        # the judge's own work and its waits for other jobs may move it as far (judge.JobState.extend).
        limit_s = timeout_s * (2 if job.get("shrunk") else 1) + BACKSTOP_S
        self._watch(outcome, start + limit_s, JUDGE_MEMORY_FACTOR * memory_limit_bytes,
                    until="result", nonce=nonce, allowance_s=timeout_s)  # fmt: skip
        if outcome.result is None:
            if not (outcome.timed_out or outcome.out_of_memory or outcome.protocol_error):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=2.0)  # the channel closed: it is exiting
            outcome.returncode = self._proc.poll()  # its own exit status, read before we kill
            self._kill()
            outcome.stderr = self._tails[1].text()[-output_limit_bytes:]
        outcome.wall_s = time.monotonic() - start
        remove_tree(workdir)
        if not self.alive:
            self.close()
        return outcome

    def _send(self, message: dict) -> None:
        self._proc.stdin.write((json.dumps(message) + "\n").encode())
        self._proc.stdin.flush()

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()

    def _watch(
        self,
        outcome: SandboxOutcome,
        deadline: float,
        memory_limit: int,
        until: str,
        nonce: str = "",
        allowance_s: float = 0.0,
    ) -> None:
        """Read the judge's channel until ``until`` comes, the deadline passes or its memory is over the
        limit. An ``extend_s`` message (the judge gave its job back time that was not the
        candidate's) moves the deadline as far, ``allowance_s`` at most in all."""
        buffer = b""
        received = 0
        next_memory_check = 0.0
        watched = outcome.host_limit = memory_limit
        while True:
            now = time.monotonic()
            if now >= deadline:
                outcome.timed_out = True
                return
            ready, _, _ = select.select([self._channel], [], [], 0)  # what the judge said (its size) comes first
            if not ready:
                if now >= next_memory_check:
                    next_memory_check = now + 0.1
                    if group_rss_bytes(self._proc.pid) > watched:
                        outcome.out_of_memory = True
                        return
                ready, _, _ = select.select([self._channel], [], [], min(0.1, deadline - now))
            if not ready:
                continue
            chunk = os.read(self._channel, 65536)
            if not chunk:
                return  # every writer is gone: the process died
            received += len(chunk)
            if received > MAX_CHANNEL_BYTES:
                outcome.protocol_error = "the judge flooded its result channel"
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if not isinstance(message, dict):
                    outcome.protocol_error = "the judge wrote a malformed message on its result channel"
                    return
                if message.get("nonce") != nonce:
                    continue  # left over from an earlier job
                if "stage" in message:
                    outcome.stage = str(message["stage"])[:100]
                    outcome.stages_seen.append(outcome.stage)
                elif type(message.get("extend_s")) in (int, float) and until == "result":
                    add = (
                        min(max(float(message["extend_s"]), 0.0), allowance_s)
                        if math.isfinite(message["extend_s"])
                        else 0.0
                    )
                    allowance_s -= add
                    deadline += add
                elif type(message.get("host_bytes")) is int and until == "result":
                    watched = memory_limit + max(message["host_bytes"], 0)  # the problem's own size
                    outcome.host_limit = watched
                elif until == "ready" and isinstance(message.get("ready"), dict):
                    self.info = message["ready"]
                    return
                elif until == "result" and isinstance(message.get("result"), dict):
                    outcome.result = message["result"]
                    return
