"""A warm sandbox: one harness process that evaluates candidates one after another.

The caller survives anything the candidate does: a wall-clock deadline per job, a memory watchdog,
capped output, its own session (so forks die with it), a private working directory per job, and an
allowlisted environment. After a timeout, a crash, runaway memory, a broken protocol or a taint
report, the process is killed; the next job starts a fresh one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import tritongym
from tritongym.errors import SandboxError

MAX_CHANNEL_BYTES = 8 << 20
"""A harness never says more than this per job; more means the channel was abused."""
FILE_SIZE_LIMIT = 256 << 20
"""Largest file the sandbox may write (RLIMIT_FSIZE)."""
START_TIMEOUT_S = 300.0
"""Importing torch and triton and creating a CUDA context takes seconds; a stuck start, not longer."""

_PASSTHROUGH_ENV = (
    "PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CC",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
)  # fmt: skip


class _CappedReader(threading.Thread):
    """Drains a pipe to EOF. Per job it keeps the first ``limit`` bytes up to the job's end marker,
    counts the rest, and never blocks the writer."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.limit = stream, 0
        self._lock = threading.Condition()
        self._kept = bytearray()
        self._dropped = 0
        self._marker = b""
        self._window = b""
        self._ended = False
        self._eof = False

    def begin(self, marker: str, limit: int) -> None:
        with self._lock:
            self.limit = limit
            self._kept, self._dropped, self._window = bytearray(), 0, b""
            self._marker, self._ended = f"\n{marker}\n".encode(), False

    def _keep(self, data: bytes) -> None:
        room = self.limit - len(self._kept)
        self._kept += data[: max(room, 0)]
        self._dropped += max(0, len(data) - max(room, 0))

    def run(self) -> None:
        try:
            while chunk := self.stream.read1(65536):
                with self._lock:
                    if self._ended or not self._marker:
                        continue  # output between jobs (a stray thread): nobody's
                    data = self._window + chunk
                    at = data.find(self._marker)
                    if at >= 0:
                        self._keep(data[:at])
                        self._ended = True
                        self._lock.notify_all()
                        continue
                    keep_back = len(self._marker) - 1
                    self._keep(data[: len(data) - keep_back] if len(data) > keep_back else b"")
                    self._window = data[-keep_back:] if len(data) > keep_back else data
        except (OSError, ValueError):
            pass
        with self._lock:
            self._eof = True
            self._lock.notify_all()

    def take(self, wait_s: float) -> str:
        """This job's output, waiting up to ``wait_s`` for its end marker (or EOF)."""
        with self._lock:
            self._lock.wait_for(lambda: self._ended or self._eof, timeout=wait_s)
            if not self._ended:
                self._keep(self._window)
            text = self._kept.decode("utf-8", errors="replace")
            if self._dropped:
                text += f"\n[... {self._dropped} more bytes dropped]"
            self._marker = b""
            return text


@dataclass
class SandboxOutcome:
    """What happened to one job in a sandbox."""

    result: dict | None = None
    """The harness's result payload, if it sent one."""
    taint: list[str] = field(default_factory=list)
    stage: str = "start"
    """The last stage the harness announced for this job."""
    stages_seen: list[str] = field(default_factory=list)
    returncode: int | None = None
    """Exit status if the process ended during the job (negative: the signal)."""
    timed_out: bool = False
    out_of_memory: bool = False
    protocol_error: str = ""
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    @property
    def lost(self) -> bool:
        """The process was killed from outside (SIGKILL that was not ours) before any stage of this
        job: not the candidate's doing, so the job may be retried."""
        return (
            self.result is None
            and not (self.timed_out or self.out_of_memory or self.protocol_error)
            and (self.returncode == -signal.SIGKILL or not self.stages_seen)
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
    """One warm harness process for one device. Not thread-safe: one job at a time."""

    def __init__(self, device: str = "cpu", device_env: dict[str, str] | None = None):
        self.device = device
        self.device_env = device_env or {}
        self.info: dict = {}
        """The harness's ``ready`` message: device name and versions."""
        self.starts = 0
        self._proc: subprocess.Popen | None = None
        self._home: Path | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the process and wait until it has imported torch/triton (and made its CUDA context)."""
        if self.alive:
            return
        self.close()
        self._home = Path(tempfile.mkdtemp(prefix="tritongym-sandbox-"))
        read_fd, write_fd = os.pipe()
        env = sandbox_env(self._home, interpret=self.device == "cpu", extra=self.device_env)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tritongym.evaluate.harness"],
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
        self._readers = [_CappedReader(self._proc.stdout), _CappedReader(self._proc.stderr)]
        for reader in self._readers:
            reader.start()
        self.starts += 1
        init = {"channel_fd": write_fd, "device": self.device, "file_size_limit": FILE_SIZE_LIMIT}
        init["home"] = str(self._home)
        init["lock_dir"] = tempfile.gettempdir()  # the GPU timing lock, shared by every sandbox of this machine
        ready = SandboxOutcome()
        self._send(init)
        self._watch(ready, time.monotonic() + START_TIMEOUT_S, memory_limit=1 << 62, until="ready")
        if not self.info:
            detail = self._readers[1].take(0.5)[-2000:]
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
            shutil.rmtree(self._home, ignore_errors=True)
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
        outcome = SandboxOutcome()
        marker = f"tritongym-end-{secrets.token_hex(8)}"
        workdir = Path(tempfile.mkdtemp(prefix="job-", dir=self._home))
        nonce = secrets.token_hex(16)
        job = job | {"workdir": str(workdir), "output_marker": marker, "nonce": nonce,
                     "candidate_path": str(workdir / "solution.py")}  # fmt: skip
        (workdir / "solution.py").write_text(job.pop("candidate_source"), encoding="utf-8")
        for reader in self._readers:
            reader.begin(marker, output_limit_bytes)
        start = time.monotonic()
        with contextlib.suppress(OSError):  # it died between jobs: the channel's EOF says so
            self._send(job)
        self._watch(outcome, start + timeout_s, memory_limit_bytes, until="result", nonce=nonce)
        finished = outcome.result is not None
        if not finished:
            if not (outcome.timed_out or outcome.out_of_memory or outcome.protocol_error):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=2.0)  # the channel closed: it is exiting
            outcome.returncode = self._proc.poll()  # its own exit status, read before we kill
            self._kill()
        elif outcome.taint:
            self._kill()
        outcome.stdout, outcome.stderr = (r.take(2.0 if finished else 0.5) for r in self._readers)
        outcome.wall_s = time.monotonic() - start
        shutil.rmtree(workdir, ignore_errors=True)
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

    def _watch(self, outcome: SandboxOutcome, deadline: float, memory_limit: int, until: str, nonce: str = "") -> None:
        buffer = b""
        received = 0
        next_memory_check = 0.0
        while True:
            now = time.monotonic()
            if now >= deadline:
                outcome.timed_out = True
                return
            if now >= next_memory_check:
                next_memory_check = now + 0.1
                if group_rss_bytes(self._proc.pid) > memory_limit:
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
                outcome.protocol_error = "the sandbox flooded its result channel"
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if not isinstance(message, dict):
                    outcome.protocol_error = "the sandbox wrote a malformed message on its result channel"
                    return
                if message.get("nonce") != nonce:
                    continue  # forged by a candidate, or left over from an earlier job
                if "stage" in message:
                    outcome.stage = str(message["stage"])[:100]
                    outcome.stages_seen.append(outcome.stage)
                elif until == "ready" and isinstance(message.get("ready"), dict):
                    self.info = message["ready"]
                    return
                elif until == "result" and "result" in message:
                    outcome.result = message["result"]
                    taint = message.get("taint") or []
                    outcome.taint = [str(t)[:300] for t in taint] if isinstance(taint, list) else ["bad taint report"]
                    return
