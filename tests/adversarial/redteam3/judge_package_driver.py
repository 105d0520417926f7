"""Driver (not a candidate) for ``rewrites_judge_package.py``: evaluate it in a pool whose runners keep
the judge's user, then start a new pool (a fresh judge, as after a lost job or on the next run) and
evaluate ``tests/candidates/correct.py``: the judge's start runs the planted line as root. The file is
restored from git afterwards. Run from the repository root of a worktree of your own:
PYTHONPATH=$PWD python tests/adversarial/redteam3/judge_package_driver.py"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))
os.environ["TRITONGYM_RUNNER_USER"] = "same"

import tritongym  # noqa: E402
from helpers import CANDIDATES, DEVICE, small_problem  # noqa: E402
from tritongym.env import LocalEnv, PoolConfig  # noqa: E402
from tritongym.evaluate import EvalConfig  # noqa: E402

MARKER = Path("/tmp/redteam3-package-owned")
TARGET = Path(tritongym.__file__).parent / "evaluate" / "judge" / "__main__.py"


def main() -> None:
    MARKER.unlink(missing_ok=True)
    problem = small_problem("vector_add")
    config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0)
    try:
        with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
            attacker = env.submit(problem, (HERE / "rewrites_judge_package.py").read_text(), config).result()
        print("attacker:", attacker.verdict, attacker.stdout.strip())
        with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
            victim = env.submit(problem, (CANDIDATES / "correct.py").read_text(), config).result()
        print("next pool's correct.py:", victim.verdict)
    finally:
        subprocess.run(["git", "checkout", "--", str(TARGET)], cwd=TARGET.parent, check=False)
    print("marker:", MARKER.read_text().strip() if MARKER.exists() else "absent")
    MARKER.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
