"""Driver (not a candidate): what the judge does on a GPU with ``baseline="compile"``, on the CPU.

1. Start a pool (runners of the judge's user), learn its sandbox home from a harmless first job.
2. In a process with the judge's HOME/TMPDIR (the home), compile the problem's reference with
   torch.compile, as speed._baseline does for an earlier job of the same problem (fills the cache).
3. Evaluate ``poisons_judges_inductor_cache.py`` in that pool.
4. Compile the reference again in a fresh process with the judge's environment (the next job's
   baseline): Inductor loads the planted entry and the command runs (MARKER appears, written by root).

Run from the repository root: PYTHONPATH=$PWD python tests/adversarial/redteam3/judge_baseline_like_gpu.py
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))
os.environ["TRITONGYM_RUNNER_USER"] = "same"

from helpers import DEVICE, small_problem  # noqa: E402
from tritongym.env import LocalEnv, PoolConfig  # noqa: E402
from tritongym.evaluate import EvalConfig  # noqa: E402

MARKER = Path("/tmp/redteam3-judge-owned")
PROBE = """
import os, torch, torch.nn as nn, triton, triton.language as tl
@triton.jit
def k(a, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(o + i, tl.load(a + i, mask=i < n), mask=i < n)
class ModelNew(nn.Module):
    def forward(self, a, b):
        print("HOME", os.path.dirname(os.path.dirname(os.getcwd())))  # <home>/jobs/runner-*
        out = torch.empty_like(a)
        k[(triton.cdiv(a.numel(), 256),)](a + b, out, a.numel(), B=256)
        return out
"""
COMPILE = """
import torch
torch.manual_seed(0)
a, b = torch.randn(4096), torch.randn(4096)
class Model(torch.nn.Module):
    def forward(self, a, b):
        return a + b
print(torch.compile(Model())(a, b).sum().item() is not None)
"""


def judge_compiles(home: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "HOME")} | {"TMPDIR": home, "HOME": home}
    subprocess.run([sys.executable, "-c", COMPILE], env=env, check=False, timeout=300)


def main() -> None:
    MARKER.unlink(missing_ok=True)
    problem = small_problem("vector_add")
    config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0)
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        probe = env.submit(problem, PROBE, config).result()
        home = next(line.split()[1] for line in probe.stdout.splitlines() if line.startswith("HOME"))
        judge_compiles(home)
        attacker = env.submit(problem, (HERE / "poisons_judges_inductor_cache.py").read_text(), config).result()
        print("attacker:", attacker.verdict, attacker.stdout.strip())
        judge_compiles(home)
    print("marker:", MARKER.read_text().strip() if MARKER.exists() else "absent")
    MARKER.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
