"""Session 13: one `evaluate` (outside a pool) on a GPU, a forward of 1,202 tiny PyTorch ops + one Triton copy
against eager (A/A-like): with the 4x launch queue resolve_device gives the judge, the speedup should read ~1.0."""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "benchmarks")
from launch_rate import write_many_ops

from tritongym import EvalConfig, evaluate, load_problems

scratch = Path(tempfile.mkdtemp())
for steps in (601, 101):
    problem_path, solution_path = write_many_ops(scratch, steps)
    problem = load_problems(str(problem_path))[0].prepare()
    config = EvalConfig(device="cuda", baseline="eager", timing_budget_s=2.0, torch_compute="allow")
    result = evaluate(problem, solution_path.read_text(), config)
    t = result.timing
    print(
        json.dumps(
            {
                "ops": 2 * steps,
                "verdict": str(result.verdict),
                "speedup": result.speedup,
                "late_brackets": t and t.late_brackets,
                "reps": t and t.reps,
                "feedback": result.feedback[:300],
            }
        ),
        flush=True,
    )
