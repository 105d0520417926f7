"""A seccomp filter that confines a runner's signals and process access to itself.

A runner that shares a user with other processes (on a GPU by default, where CUDA IPC between the
judge and the runner only works within one user; or under a judge that is not root) could otherwise
signal every process of that user: stop its zygote so that nothing reaps a helper it left behind,
kill the spare runner of the next job, or the judge. The filter, installed in the runner before the
candidate is imported and inherited by every thread and process the candidate starts, lets signals
go only to the runner itself or its own process group (the runner leads its session), and refuses
the calls that read or write another process's memory or take its files. The kernel reads a pid
argument as a 32-bit ``pid_t``, which is the word the filter compares.

The filter is written for x86-64 Linux; elsewhere runners go without it (docs/environment.md says
what that leaves open). A 32-bit system call (``int 0x80``, another audit architecture) or an x32
one from a filtered process kills it, so that no other table of system-call numbers slips past.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

SYS_SECCOMP = 317
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_EPERM = 0x00050000 | errno.EPERM

LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K

OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16
"""Offsets in ``struct seccomp_data``: the call number, the audit architecture, the first argument's
low (little-endian) 32 bits."""

SIGNALS_BY_PID = {"kill": 62, "rt_sigqueueinfo": 129, "tgkill": 234, "rt_tgsigqueueinfo": 297}
"""Calls whose first argument names the process (or, negated, the process group) to signal."""
REFUSED = {
    "ptrace": 101,
    "tkill": 200,  # by thread id only: tgkill is what libc and Python use
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "pidfd_send_signal": 424,
    "pidfd_getfd": 438,
}


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() == "x86_64"


def program(pid: int) -> list[tuple[int, int, int, int]]:
    """The filter for a runner of this pid, as (code, jump if true, jump if false, constant)."""
    if not 0 < pid < 1 << 31:
        raise ValueError(f"not a process id: {pid}")
    own = [pid, 0, (-pid) & 0xFFFFFFFF]  # itself, its own group (0 and minus its id: it leads it)
    body: list[tuple[int, int, int, int]] = [
        (LD_W_ABS, 0, 0, OFFSET_ARCH),
        (JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        (RET_K, 0, 0, RET_KILL_PROCESS),
        (LD_W_ABS, 0, 0, OFFSET_NR),
        (JGE_K, 0, 1, X32_SYSCALL_BIT),
        (RET_K, 0, 0, RET_KILL_PROCESS),
    ]
    refused = sorted(REFUSED.values())
    by_pid = sorted(SIGNALS_BY_PID.values())
    # After the number checks: ALLOW, then the pid check (len(own) + 2 instructions).
    checks = len(refused) + len(by_pid)
    for index, number in enumerate(refused):
        to_eperm = checks - index - 1 + 1  # past the remaining checks and the ALLOW
        to_eperm += len(own) + 1  # past the pid check, to its EPERM
        body.append((JEQ_K, to_eperm, 0, number))
    for index, number in enumerate(by_pid):
        to_check = len(by_pid) - index - 1 + 1  # past the remaining checks and the ALLOW
        body.append((JEQ_K, to_check, 0, number))
    body.append((RET_K, 0, 0, RET_ALLOW))
    body.append((LD_W_ABS, 0, 0, OFFSET_ARG0))
    for index, target in enumerate(own):
        body.append((JEQ_K, len(own) - index, 0, target))  # to the ALLOW after the EPERM
    body.append((RET_K, 0, 0, RET_EPERM))
    body.append((RET_K, 0, 0, RET_ALLOW))
    return body


def confine(pid: int) -> None:
    """Install the filter in every thread of the process (the CUDA driver's included) and so in every
    thread and process started later. Needs no_new_privs (``drop_capabilities`` sets it)."""
    if not supported():
        raise OSError(f"the runner's seccomp filter is written for x86-64 Linux, not {platform.machine()}")
    instructions = program(pid)
    raw = b"".join(struct.pack("<HBBI", *instruction) for instruction in instructions)
    buffer = ctypes.create_string_buffer(raw, len(raw))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(instructions), ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    answer = libc.syscall(
        ctypes.c_long(SYS_SECCOMP),
        ctypes.c_long(SECCOMP_SET_MODE_FILTER),
        ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(fprog),
    )
    if answer != 0:  # a thread id: that thread could not take the filter
        raise OSError(ctypes.get_errno(), f"installing the runner's seccomp filter failed ({answer})")
