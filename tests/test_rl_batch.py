"""benchmarks/rl_batch.py: the RL-shaped batch it builds gets the verdicts each kind is made for."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import rl_batch  # noqa: E402

from tritongym.problems import find_problem  # noqa: E402


def test_every_candidate_of_the_batch_has_kernels_of_its_own():
    problem = find_problem("vector_add")
    sources = [task.candidate for _, task in rl_batch.batch([problem], 12)]
    assert len(set(sources)) == 12
    kinds = [kind for kind, _ in rl_batch.batch([problem], 6)]
    assert kinds.count("correct") == 3 and set(kinds) == set(rl_batch.EXPECTED)


def test_a_small_batch_on_the_cpu_gets_the_verdicts_its_kinds_were_made_for(tmp_path):
    out = tmp_path / "rl_batch.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "rl_batch.py"), "--device", "cpu", "--candidates", "6",
         "--sandboxes", "1", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["candidates"] == 6 and report["unexpected"] == {}, report["verdicts_by_kind"]
    assert report["verdicts_by_kind"]["correct"] == {"ok": 3}
    assert report["seconds_per_candidate"] > 0 and "total" in report["median_stage_seconds"]
