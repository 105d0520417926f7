"""Service overhead per task: what HTTP + queue + store add to an evaluation, on this machine.

Starts `tritongym serve` on loopback (one CPU sandbox), sends tasks one at a time through HttpEnv,
and reports, per task, client latency (submit to result) minus the sandbox's own wall time.
Also measures a result-cache hit, which never reaches a sandbox.

    python benchmarks/service_overhead.py --tasks 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tritongym.env.client import HttpEnv
from tritongym.evaluate import EvalConfig
from tritongym.problems import find_problem

RESULTS = Path(__file__).parent / "results"


def start_server(db: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "tritongym", "serve", "--port", str(port), "--db", str(db), "--devices", "cpu",
           "--jobs", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def percentiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "median_ms": round(1000 * statistics.median(values), 2),
        "p90_ms": round(1000 * values[int(0.9 * (len(values) - 1))], 2),
        "max_ms": round(1000 * values[-1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100)
    args = parser.parse_args()
    problem = find_problem("vector_add").small()
    config = EvalConfig(trials=1)
    proc, url = start_server(Path(tempfile.mkdtemp()) / "bench.db")
    overheads, cache_hits, sandbox = [], [], []
    try:
        with HttpEnv(url, fresh=True) as env:
            env.submit(problem, problem.solution, config).result()  # warm-up
            for i in range(args.tasks):
                candidate = problem.solution + f"\n# variant {i}\n"  # distinct: no cache hit
                start = time.perf_counter()
                result = env.submit(problem, candidate, config).result()
                latency = time.perf_counter() - start
                overheads.append(latency - result.stage_seconds["sandbox_wall"])
                sandbox.append(result.stage_seconds["sandbox_wall"])
        with HttpEnv(url) as env:
            for _ in range(args.tasks):
                start = time.perf_counter()
                env.submit(problem, problem.solution, config).result()
                cache_hits.append(time.perf_counter() - start)
    finally:
        proc.terminate()
        proc.wait()
    report = {
        "benchmark": "service_overhead",
        "tasks": args.tasks,
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count()},
        "overhead_per_task": percentiles(overheads),
        "sandbox_wall": percentiles(sandbox),
        "cache_hit_latency": percentiles(cache_hits),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "service_overhead_cpu.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
