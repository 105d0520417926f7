"""Diagnostic: does a process's CUDA work get slower after one torch.profiler run with CUDA activity?

The judge profiles each problem's reference once (work_queues.StreamWatch) in the process where it
later times the reference; CUPTI left attached after a profile would slow the reference's launches
there and inflate every speedup of a launch-bound problem. Each mode runs in a fresh process: launch
rate (host microseconds per launch of a tiny kernel, and GPU microseconds per kernel of a launch-bound
loop between two events) before the profile, right after it and one second later; plus the streams
the profiled forward (a cuDNN LSTM, an elementwise op) ran GPU work on. Modes: ``TEARDOWN_CUPTI``
unset, ``1`` (what StreamWatch sets), ``0``.

    python benchmarks/cupti_after_profile.py --out /tmp/cupti_after_profile.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

LAUNCHES = 4000


def launch_rate(x) -> dict:
    import torch

    host, gpu = [], []
    for _ in range(5):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began = time.perf_counter()
        start.record()
        for _ in range(LAUNCHES):
            x.add_(1)
        end.record()
        host.append((time.perf_counter() - began) / LAUNCHES * 1e6)
        end.synchronize()
        gpu.append(start.elapsed_time(end) * 1e3 / LAUNCHES)
    return {"host_us": round(statistics.median(host), 3), "gpu_us": round(statistics.median(gpu), 3)}


def child() -> dict:
    import torch

    from tritongym.evaluate.judge.work_queues import StreamWatch

    x = torch.zeros(1, device="cuda")
    lstm = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True).cuda()
    seq = torch.randn(16, 100, 64, device="cuda")
    with torch.no_grad():
        lstm(seq)
    report = {"before": launch_rate(x)}
    os.environ.pop("TEARDOWN_CUPTI", None)  # StreamWatch sets it; the mode decides for the first profile
    if os.environ.get("MODE") is not None:
        os.environ["TEARDOWN_CUPTI"] = os.environ["MODE"]
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.no_grad(), torch.profiler.profile(activities=activities):
        lstm(seq)
        torch.cuda.synchronize()
    report["after"] = launch_rate(x)
    time.sleep(1.0)
    report["after_1s"] = launch_rate(x)
    for name, run in (("lstm", lambda: lstm(seq)), ("elementwise", lambda: torch.tanh(seq) * 2)):
        with torch.no_grad(), StreamWatch("cuda") as watch:
            run()
        report[f"streams_{name}"] = None if watch.streams is None else len(watch.streams)
    report["after_watch"] = launch_rate(x)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.out.write_text(json.dumps(child()))
        return
    import torch

    results = {"torch": torch.__version__, "cuda": torch.version.cuda, "modes": {}}
    for mode in ("unset", "1", "0"):
        env = {k: v for k, v in os.environ.items() if k not in ("MODE", "TEARDOWN_CUPTI")}
        if mode != "unset":
            env["MODE"] = mode
        part = args.out.with_suffix(f".{mode}.json")
        subprocess.run([sys.executable, __file__, "--child", "--out", str(part)], env=env, check=True, timeout=120)
        results["modes"][mode] = json.loads(part.read_text())
        part.unlink()
        print(mode, json.dumps(results["modes"][mode]), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
