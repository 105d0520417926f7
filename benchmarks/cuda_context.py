"""What a runner's CUDA context is made of: fresh processes (torch imported first, as the zygote's
forks have it) that start together and time each part of making one, alone and several at once.

Parts, in order (seconds): ``init`` (cuInit through the driver), ``context`` (the device's primary
context, retained and made current), ``alloc`` (torch's first allocation), ``launch`` (a first
kernel and its module, synchronised), ``triton`` (Triton's driver, as a runner's warm-up has it);
``context_mib``: device memory one process took (nvidia-smi's count with and without it). Each
variant sets environment variables for its processes:

    python benchmarks/cuda_context.py --concurrency 1 4 --repeats 2 --out /tmp/cuda_context.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

VARIANTS = {
    "default": {},
    "max_connections_1": {"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
    "eager_modules": {"CUDA_MODULE_LOADING": "EAGER"},
}

SMI = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"]

CHILD = (
    f"SMI = {SMI!r}\n"
    + r"""
import ctypes, json, subprocess, sys, time
import torch
def smi():
    return int(subprocess.run(SMI, capture_output=True, text=True).stdout.split()[0])
cuda = ctypes.CDLL("libcuda.so.1")
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
times = [time.perf_counter()]
assert cuda.cuInit(0) == 0
times.append(time.perf_counter())
device, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
times.append(time.perf_counter())
x = torch.empty(1, device="cuda")
times.append(time.perf_counter())
x.fill_(1).add_(1)
torch.cuda.synchronize()
times.append(time.perf_counter())
from triton.runtime import driver
driver.active.get_current_device()
times.append(time.perf_counter())
used = smi() if len(sys.argv) > 1 else 0
parts = ("init", "context", "alloc", "launch", "triton")
print(json.dumps({"parts": {k: b - a for k, a, b in zip(parts, times, times[1:])}, "used_mib": used}))
"""
)


def group(n: int, env: dict[str, str], smi: bool = False) -> list[dict]:
    """``n`` processes that make their contexts at once; each one's parts (with ``smi``, the device
    memory used while its context exists, nvidia-smi's MiB)."""
    command = [sys.executable, "-c", CHILD, *(["smi"] if smi else [])]
    procs = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ | env)
             for _ in range(n)]  # fmt: skip
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs]


def used_mib() -> int:
    return int(subprocess.run(SMI, capture_output=True, text=True, check=True).stdout.split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    report: dict = {"benchmark": "cuda_context", "variants": {}}
    for name, env in VARIANTS.items():
        for n in args.concurrency:
            runs = [r for _ in range(args.repeats) for r in group(n, env)]
            parts = {k: round(statistics.median(r["parts"][k] for r in runs), 4) for k in runs[0]["parts"]}
            parts["total"] = round(statistics.median(sum(r["parts"].values()) for r in runs), 4)
            report["variants"][f"{name}_x{n}"] = parts
            print(name, n, json.dumps(parts), flush=True)
    with contextlib.suppress(OSError, ValueError, IndexError, subprocess.CalledProcessError):
        before = used_mib()
        report["context_mib"] = group(1, {}, smi=True)[0]["used_mib"] - before
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
