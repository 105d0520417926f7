"""Driver for plants_package_for_restarted_zygote.py (not a candidate): evaluates it in a same-user
pool, then runs the command line with which the judge restarts a dead zygote on a GPU
(runners.Zygote.launch: `python -s -m tritongym.evaluate.judge.zygote FD PARENT DEVICE`, cwd=home,
the judge's environment) in that pool's home, and shows which tritongym it imported.

    TRITONGYM_RUNNER_USER=same PYTHONPATH=$PWD python tests/adversarial/redteam2/restart_zygote_like_gpu.py
"""

import subprocess
import sys
from pathlib import Path

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig
from tritongym.evaluate.sandbox import sandbox_env
from tritongym.problems import find_problem

LOG = Path("/tmp/redteam2-escape.log")
here = Path(__file__).parent
problem = find_problem("vector_add").small()
config = EvalConfig(device="cpu", trials=2)
with LocalEnv(PoolConfig(devices="cpu", sandboxes_per_device=1)) as env:
    result = env.evaluate_batch([Task(problem, (here / "plants_package_for_restarted_zygote.py").read_text())], config)[
        0
    ]
    print("attacker:", result.verdict.value)
    home = Path(LOG.read_text().split("planted ")[-1].split(" (real")[0]).parent
    env_vars = sandbox_env(home, interpret=False, extra={})
    probe = "import tritongym, os; print('zygote would import tritongym from', tritongym.__file__)"
    done = subprocess.run([sys.executable, "-s", "-c", probe], cwd=home, env=env_vars, capture_output=True, text=True)
    print("python -s -c, cwd=home (no -m):", done.stdout.strip())
    done = subprocess.run(
        [sys.executable, "-s", "-m", "tritongym.evaluate.judge.zygote", "99", "1", "cuda"],
        cwd=home, env=env_vars, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    print("restart command exited", done.returncode, done.stderr[-600:])
    print("home holds", sorted(p.name for p in home.iterdir()))
print(LOG.read_text())
