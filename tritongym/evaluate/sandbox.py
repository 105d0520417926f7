"""Run the harness in a child process the caller survives: wall-clock deadline, memory watchdog,
capped output, its own session (so forks die with it) and a private working directory."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import tritongym
from tritongym.errors import SandboxError

MAX_CHANNEL_BYTES = 8 << 20
"""A harness never says more than this; more means the channel was abused."""

_PASSTHROUGH_ENV = (
    "PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CC",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
)  # fmt: skip


class _CappedReader(threading.Thread):
    """Drains a pipe to EOF, keeping only the first ``limit`` bytes (a flood cannot block or bloat)."""

    def __init__(self, stream, limit: int):
        super().__init__(daemon=True)
        self.stream, self.limit = stream, limit
        self.kept = bytearray()
        self.dropped = 0

    def run(self) -> None:
        try:
            while chunk := self.stream.read1(65536):
                room = self.limit - len(self.kept)
                self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - room)
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        return text + (f"\n[... {self.dropped} more bytes dropped]" if self.dropped else "")


@dataclass
class SandboxOutcome:
    """What happened to one harness process."""

    result: dict | None = None
    """The harness's final message, if it sent one."""
    stage: str = "start"
    """The last stage the harness announced."""
    stages_seen: list[str] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    out_of_memory: bool = False
    protocol_error: str = ""
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0


def sandbox_env(workdir: Path, interpret: bool, extra: dict[str, str]) -> dict[str, str]:
    """An allowlisted environment: nothing of the caller's (tokens, keys) reaches candidate code."""
    env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
    package_root = str(Path(tritongym.__file__).resolve().parent.parent)
    env |= {
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "PYTHONPATH": package_root,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "TRITON_CACHE_DIR": str(workdir / ".triton"),
    }
    if interpret:
        env |= {"TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    return env | extra


def _group_rss_bytes(pgid: int) -> int:
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


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_harness(
    job: dict,
    workdir: Path,
    env: dict[str, str],
    timeout_s: float,
    memory_limit_bytes: int,
    output_limit_bytes: int,
) -> SandboxOutcome:
    """Start the harness on ``job``, watch it, and return what happened. Never raises for anything
    the candidate does; raises SandboxError only if the process cannot be started."""
    outcome = SandboxOutcome()
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tritongym.evaluate.harness"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=env,
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        raise SandboxError(f"cannot start the sandbox process: {exc}") from exc
    finally:
        os.close(write_fd)
    readers = [_CappedReader(proc.stdout, output_limit_bytes), _CappedReader(proc.stderr, output_limit_bytes)]
    for reader in readers:
        reader.start()
    try:
        proc.stdin.write((json.dumps(job | {"channel_fd": write_fd}) + "\n").encode())
        proc.stdin.close()
    except OSError:
        pass  # it died at once; the channel's EOF says so
    _watch(proc, read_fd, start + timeout_s, memory_limit_bytes, outcome)
    _kill_group(proc)
    outcome.returncode = proc.wait()
    os.close(read_fd)
    for reader in readers:
        reader.join(timeout=2.0)  # a grandchild that left the group may hold the pipe: don't wait on it
    outcome.stdout, outcome.stderr = readers[0].text(), readers[1].text()
    outcome.wall_s = time.monotonic() - start
    return outcome


def _watch(proc, read_fd: int, deadline: float, memory_limit: int, outcome: SandboxOutcome) -> None:
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
            if _group_rss_bytes(proc.pid) > memory_limit:
                outcome.out_of_memory = True
                return
        ready, _, _ = select.select([read_fd], [], [], min(0.1, deadline - now))
        if not ready:
            continue
        chunk = os.read(read_fd, 65536)
        if not chunk:
            return  # every writer is gone: the harness exited or died
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
                outcome.protocol_error = "the sandbox wrote a malformed message on its result channel"
                return
            if not isinstance(message, dict):
                outcome.protocol_error = "the sandbox wrote a malformed message on its result channel"
                return
            if "stage" in message:
                outcome.stage = str(message["stage"])[:100]
                outcome.stages_seen.append(outcome.stage)
            elif "result" in message:
                outcome.result = message["result"]
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2.0)
                return
