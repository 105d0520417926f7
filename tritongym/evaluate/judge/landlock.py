"""Landlock: the kernel's unprivileged file-system (and TCP, and scope) confinement, for runners.

A runner that shares the judge's user (on a GPU always: CUDA's legacy inter-process handles do not
open across users; under a judge that is not root, on every device) owns every file that user owns:
without this it could rewrite tritongym's or torch's source (the next judge runs it), the judge's
caches, and, as a capability-less root, ``/proc/sys`` and other processes' ``/proc/<pid>`` files.
``confine_runner`` installs a ruleset in the runner's main thread, before any candidate code and
before any Python thread starts: every write-type access the kernel's Landlock ABI knows is refused
except beneath the runner's own directory (removed with its job), the runner's own ``/proc/<pid>``,
``/dev/shm`` on a GPU (CUDA IPC through torch opens the judge's reference-count files there for
writing) and the device files an accelerator needs (``/dev/nvidia*``: writes and ioctls). Reads and
execution stay allowed. From ABI 4 TCP ``bind`` and ``connect`` are refused, from ABI 6 signals to
and abstract UNIX sockets of processes outside the runner's domain.

A Landlock domain belongs to a thread and is inherited by the threads and processes it starts, not
by threads that exist already: CUDA's driver threads, made while the runner warmed up, stay outside
it. They run no Python; code that took control of one through the process's memory (ctypes) would
escape the ruleset (docs/environment.md, threat model).

The system calls are made through ``syscall(2)`` by number (444, 445, 446: the same on x86-64 and
every architecture of the generic table, arm64 included).
"""

from __future__ import annotations

import ctypes
import errno
import glob
import logging
import os
import struct
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tritongym.errors import ConfigError

log = logging.getLogger(__name__)

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

WRITES_BY_ABI = {
    1: FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK
    | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM,
    2: FS_REFER,
    3: FS_TRUNCATE,
    5: FS_IOCTL_DEV,
}  # fmt: skip
"""The write-type rights each ABI adds. Reads (READ_FILE, READ_DIR) and EXECUTE are never handled."""
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""The only rights a rule on a file that is not a directory may carry."""
NOT_BEFORE = {
    2: "moving or linking a file into another directory is refused everywhere (ABI 1 cannot allow it anywhere)",
    3: "truncating files outside the writable directories (truncate(2), O_TRUNC) is allowed",
    4: "TCP connections and listening sockets are allowed",
    5: "ioctls on every device file are allowed",
    6: "signals to, and abstract UNIX sockets of, processes outside the runner are not confined by Landlock",
}
"""What a ruleset of an older ABI leaves as it was, by the ABI that first closes it."""

MODE_ENV = "TRITONGYM_RUNNER_LANDLOCK"
"""``required`` (default): a runner that shares the judge's user refuses to start without Landlock;
``optional``: it starts without (a warning); ``off``: no runner is confined (a diagnosis, e.g. of a
host where CUDA fails under it; redteam3's breaks #1, #2 and #4 are open again)."""
MODES = ("required", "optional", "off")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"Landlock system call {number} failed: {os.strerror(code)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI, 0 where it has none (not built in, not enabled at boot, or the call
    refused by a container's seccomp profile)."""
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
            return 0
        raise


def handled_writes(abi: int) -> int:
    """Every write-type file-system right ABI ``abi`` knows."""
    return sum(rights for since, rights in WRITES_BY_ABI.items() if abi >= since)


def unconfined(abi: int) -> list[str]:
    """What a runner's ruleset cannot restrict on a kernel of ABI ``abi`` (everything where it is 0)."""
    if abi <= 0:
        return ["the kernel has no Landlock: runners may write every file their user may write"]
    return [what for since, what in NOT_BEFORE.items() if abi < since]


def mode() -> str:
    chosen = os.environ.get(MODE_ENV, "") or "required"
    if chosen not in MODES:
        raise ConfigError(f"{MODE_ENV}={chosen!r}: expected one of {', '.join(MODES)}")
    return chosen


@dataclass
class Policy:
    """What a confined process may still change."""

    writable: list[str] = field(default_factory=list)
    """Directories beneath which every write-type right is allowed."""
    devices: list[str] = field(default_factory=list)
    """Files (device files) that may be opened for writing and, from ABI 5, take ioctls."""
    deny_tcp: bool = True
    """From ABI 4: refuse every TCP bind and connect."""
    scoped: bool = True
    """From ABI 6: refuse signals to, and connections to abstract UNIX sockets of, processes outside
    the domain."""


@dataclass
class Confinement:
    """What ``restrict`` installed."""

    abi: int
    not_confined: list[str]
    """What this ABI could not restrict."""
    missing: list[str]
    """Paths of the policy that did not exist (no rule was made for them)."""


def restrict(policy: Policy, abi: int | None = None) -> Confinement:
    """Confine the calling thread, and every thread and process it starts from now on, to ``policy``.
    Needs no_new_privs (or CAP_SYS_ADMIN). Raises OSError where the kernel has no Landlock."""
    abi = abi_version() if abi is None else abi
    if abi <= 0:
        raise OSError(errno.EOPNOTSUPP, "the kernel has no Landlock")
    handled_fs = handled_writes(abi)
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and policy.deny_tcp else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 and policy.scoped else 0
    if abi >= 6:
        attr = struct.pack("<QQQ", handled_fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("<QQ", handled_fs, handled_net)
    else:
        attr = struct.pack("<Q", handled_fs)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _syscall(SYS_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    missing: list[str] = []
    try:
        for path in policy.writable:
            if not _allow(ruleset, path, handled_fs, directory=True):
                missing.append(path)
        for path in policy.devices:
            if not _allow(ruleset, path, handled_fs & FILE_RIGHTS, directory=False):
                missing.append(path)
        _libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: restrict_self requires it (a no-op if set)
        _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return Confinement(abi, unconfined(abi), missing)


def _allow(ruleset: int, path: str, rights: int, directory: bool) -> bool:
    """Add a path-beneath rule; False if the path does not exist."""
    flags = os.O_PATH | os.O_CLOEXEC | (os.O_DIRECTORY if directory else 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        if not directory and os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= FILE_RIGHTS  # a directory of device files (nvidia-caps): the file rights beneath it
        attr = ctypes.create_string_buffer(struct.pack("<Qi", rights, fd), 12)  # packed: u64, s32
        _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), attr, ctypes.c_uint32(0))
    finally:
        os.close(fd)
    return True


# -- the runner's policy ------------------------------------------------------------------------

DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
"""Device files every process may write to."""
ACCELERATOR_FILES = ("/dev/nvidia*", "/dev/dri", "/dev/kfd")
"""Patterns of the device files a GPU runner's CUDA (or ROCm) driver opens, for writing and ioctls."""
GPU_WRITABLE = ("/dev/shm",)
"""Directories a GPU runner writes besides its own: torch's CUDA IPC opens the judge's reference-count
file there read-write (``rebuild_cuda_tensor``)."""


def runner_writable_roots(directory: str, device: str) -> list[str]:
    """Every directory a runner may write beneath: the one list to extend (each must be removed with
    the job, or hold nothing of the judge's). Reads are never restricted: a store the runner must
    read but not write needs nothing here."""
    roots = [directory, f"/proc/{os.getpid()}"]  # its own /proc entry: thread names, its own settings
    if device != "cpu":
        roots += GPU_WRITABLE
    return roots


def runner_devices(device: str, patterns: Iterable[str] = ACCELERATOR_FILES) -> list[str]:
    found = list(DEVICE_FILES)
    if device != "cpu":
        found += sorted({path for pattern in patterns for path in glob.glob(pattern)})
    return found


def runner_policy(directory: str, device: str) -> Policy:
    return Policy(writable=runner_writable_roots(directory, device), devices=runner_devices(device))


def confine_runner(directory: str, device: str, shares_judge_user: bool) -> Confinement | None:
    """Confine this runner (its main thread, before any other Python thread and any candidate code).
    None where it is not confined: ``off``, or no Landlock where the runner has a user of its own
    (or ``optional``). Raises OSError where a runner that shares the judge's user cannot be confined
    and Landlock is ``required``."""
    chosen = mode()
    if chosen == "off":
        return None
    abi = abi_version()
    if abi <= 0:
        if shares_judge_user and chosen == "required":
            raise OSError(errno.EOPNOTSUPP, f"the kernel has no Landlock and the runner shares the judge's user "
                          f"(set {MODE_ENV}=optional to run unconfined)")  # fmt: skip
        return None
    if threading.active_count() != 1:  # a thread that exists now would stay outside the domain
        raise RuntimeError(f"the runner has {threading.active_count()} Python threads before Landlock: one expected")
    return restrict(runner_policy(directory, device), abi)


_warned: list[str] = []


def check_host(shares_judge_user: bool) -> None:
    """Before a pool starts (the same kernel as its runners): raise ConfigError where runners would
    share the judge's user on a kernel without Landlock and it is ``required``; warn once where
    runners go unconfined or partly confined."""
    chosen = mode()
    abi = abi_version() if chosen != "off" else 0
    if chosen == "off":
        message = f"{MODE_ENV}=off: runners are not confined to their job's directory"
    elif abi <= 0 and shares_judge_user and chosen == "required":
        raise ConfigError(
            "the kernel has no Landlock (Linux 5.13 or later, enabled with lsm=...,landlock), so a runner "
            "that shares the judge's user could write every file of that user (tritongym's own source "
            f"included). Use a kernel with Landlock, run the judge as root on the CPU (runners get users of "
            f"their own), or set {MODE_ENV}=optional to accept the risk"
        )
    elif abi <= 0:
        message = "the kernel has no Landlock: runners are not confined to their job's directory"
    elif unconfined(abi):
        message = f"Landlock ABI {abi}: " + "; ".join(unconfined(abi))
    else:
        return
    if message not in _warned:
        _warned.append(message)
        log.warning("%s", message)


def describe(confinement: Confinement | None) -> Sequence[str]:
    """A confinement in words (for logs and the GPU probe)."""
    if confinement is None:
        return ["not confined"]
    lines = [f"Landlock ABI {confinement.abi}", *confinement.not_confined]
    return lines + [f"no rule for {path} (absent)" for path in confinement.missing]
