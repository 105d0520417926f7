"""Probe of runners' GPU memory (red team 8 #3): does NVML name this container's pids, what do honest
runners hold on the GPU (bundled solutions, KernelBench problems as lazy candidates), what does the
hog (tests/adversarial/redteam8/hogs_the_gpu_memory.py) do to its job and to one beside it.

    python3 benchmarks/gpu_memory_probe.py [--kernelbench build/KernelBench] --out probe.json

A thread samples NVML's per-process usage every 10 ms; each process is classified when first seen
(the judge: a child of this process; the twin: its command line; a runner: any other pid of the
pool's tree) and its largest reading kept, job by job."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch

from tritongym.evaluate import EvalConfig
from tritongym.evaluate.judge.gpu_memory import Nvml
from tritongym.evaluate.judge.runners import tree_pids

GIB = float(1 << 30)
LAZY_SUFFIX = """

import triton
import triton.language as tl


@triton.jit
def lazy_touch_kernel(ptr):
    tl.store(ptr, tl.load(ptr) + 1.0)


class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        devices = [a.device for a in args if isinstance(a, torch.Tensor)]
        touch = torch.zeros(1, device=devices[0] if devices else "cuda")
        lazy_touch_kernel[(1,)](touch)
        return out
"""


BIG_ADD = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL)]


def get_init_inputs():
    return []
"""


class Sampler(threading.Thread):
    def __init__(self, nvml: Nvml):
        super().__init__(daemon=True)
        self.nvml, self.peak, self.kind, self.stop_flag = nvml, {}, {}, False
        self.low_free = 1 << 62
        self.start()

    def classify(self, pid: int) -> str:
        mine = set(tree_pids(os.getpid()))
        if pid not in mine:
            return "foreign"
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            return "gone"
        if pid == os.getpid():
            return "probe"
        if "twin" in cmd:
            return "twin"
        return "judge" if ppid == os.getpid() else "runner"

    def run(self) -> None:
        while not self.stop_flag:
            readings = self.nvml.processes() or {}
            for pid, used in readings.items():
                if pid not in self.kind:
                    self.kind[pid] = self.classify(pid)
                self.peak[pid] = max(self.peak.get(pid, 0), used or 0)
            mem = self.nvml.memory()
            if mem:
                self.low_free = min(self.low_free, mem[0])
            time.sleep(0.01)

    def take(self) -> dict:
        peak, kind, low = dict(self.peak), dict(self.kind), self.low_free
        self.peak, self.low_free = {}, 1 << 62
        by_kind: dict[str, int] = {}
        for pid, used in peak.items():
            k = kind.get(pid, "?")
            by_kind[k] = max(by_kind.get(k, 0), used)
        return {"max_by_kind_gib": {k: round(v / GIB, 3) for k, v in by_kind.items()},
                "pids": {str(p): [kind.get(p, "?"), round(v / GIB, 3)] for p, v in peak.items()},
                "low_free_gib": round(low / GIB, 2)}  # fmt: skip


def _ipc_child(queue, done) -> None:
    held = queue.get()  # a CUDA tensor of the parent's, opened by CUDA IPC
    torch.cuda.synchronize()
    done.put(int(held.numel()))
    time.sleep(20)


def ipc_probe(nvml: Nvml) -> dict:
    """Does NVML count a CUDA IPC mapping of 2 GiB in the process that opened it?"""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    shared = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    child = ctx.Process(target=_ipc_child, args=(queue, done), daemon=True)
    child.start()
    queue.put(shared)
    got = done.get(timeout=60)
    readings = nvml.processes() or {}
    child.kill()
    child.join()
    return {"opened_bytes": got, "child_reading": readings.get(child.pid), "readings": readings}


def pid_namespace_probe(nvml: Nvml) -> dict:
    out: dict = {"pid": os.getpid()}
    with open("/proc/self/status") as fh:
        out["nspid"] = next((line.split()[1:] for line in fh if line.startswith("NSpid")), None)
    out["before_context"] = nvml.processes()
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    out["after_context"] = nvml.processes()
    out["sees_own_pid"] = nvml.sees(os.getpid())
    code = (
        "import torch,time;x=torch.empty(2<<30,dtype=torch.uint8,device='cuda');print('ok',flush=True);time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    child.stdout.readline()
    out["child_pid"] = child.pid
    out["with_child"] = nvml.processes()
    out["sees_child"] = nvml.sees(child.pid)
    free_before = torch.cuda.mem_get_info()[0]
    child.kill()
    child.wait()
    t0 = time.monotonic()
    while torch.cuda.mem_get_info()[0] < free_before + (2 << 30) and time.monotonic() - t0 < 5:
        time.sleep(0.01)
    out["child_freed_after_s"] = round(time.monotonic() - t0, 3)
    out["ipc"] = ipc_probe(nvml)
    t0 = time.perf_counter()
    for _ in range(200):
        nvml.processes()
    out["query_ms"] = round((time.perf_counter() - t0) / 200 * 1e3, 3)
    del x
    torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from tritongym.env import LocalEnv, PoolConfig, Task
    from tritongym.problems import Problem, find_problem, load_bundled, load_problems

    uuid = str(torch.cuda.get_device_properties(0).uuid)
    nvml = Nvml.open(uuid)
    report: dict = {"uuid": uuid, "nvml": nvml is not None}
    print("uuid", uuid, "nvml", nvml is not None, flush=True)
    if nvml is None:
        args.out.write_text(json.dumps(report, indent=1))
        return
    report["namespace"] = pid_namespace_probe(nvml)
    print(json.dumps(report["namespace"]), flush=True)
    args.out.write_text(json.dumps(report, indent=1, default=str))
    sampler = Sampler(nvml)
    hog_source = Path("tests/adversarial/redteam8/hogs_the_gpu_memory.py").read_text()
    numel = 1 << 28  # 1 GiB per input: trial 2's inputs are the judge's fresh allocation after the import
    big_add = Problem(name="big_vector_add", source=BIG_ADD.replace("NUMEL", str(numel)))
    honest_add = find_problem("vector_add").solution
    untimed = EvalConfig(device="cuda", trials=2, timing=False, profile=False, timeout_s=120)
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=2)) as env:
        t0 = time.monotonic()
        results = env.evaluate_batch([Task(big_add, hog_source, "hog"), Task(big_add, honest_add, "honest")], untimed)
        report["hog"] = [{"verdict": str(r.verdict), "feedback": r.feedback[:600], "stdout": r.stdout[:200],
                          "stages": r.stage_seconds} for r in results]  # fmt: skip
        report["hog_sampled"] = sampler.take()
        report["hog_seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(report["hog"], indent=1), json.dumps(report["hog_sampled"]), flush=True)
    args.out.write_text(json.dumps(report, indent=1, default=str))
    tasks = [Task(p, p.solution, p.name) for p in load_bundled()]
    if args.kernelbench is not None:
        wanted = {"level3": ["2_ShallowWideMLP", "11_VGG16", "43_MinGPTCausalAttention"]}
        wanted["level1"] = ["1_Square_matrix_multiplication_", "54_conv_standard_3D__square_input__square_kernel"]
        for level, names in wanted.items():
            for p in load_problems(args.kernelbench / level):
                if p.name in names:
                    p = p.prepare()
                    tasks.append(Task(p, p.source.rstrip() + "\n" + LAZY_SUFFIX, p.name))
    report["honest"] = jobs = []
    with LocalEnv(PoolConfig(devices="cuda:0", sandboxes_per_device=1)) as env:
        for task in tasks:
            t0 = time.monotonic()
            timed = task.problem.name.startswith(("2_", "11_", "43_"))
            config = EvalConfig(
                device="cuda", trials=2, timing=timed, timing_budget_s=0.3, profile=False, timeout_s=120
            )
            result = env.evaluate_batch([task], config)[0]
            jobs.append({"task": task.label, "timed": timed, "verdict": str(result.verdict),
                         "seconds": round(time.monotonic() - t0, 1), **sampler.take(),
                         "feedback": result.feedback[:300]})  # fmt: skip
            print(json.dumps(jobs[-1]), flush=True)
            args.out.write_text(json.dumps(report, indent=1, default=str))
    sampler.stop_flag = True
    args.out.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
