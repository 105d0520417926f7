"""Session 13: four honest few-microsecond kernels read timing_untrusted (candidate_noise) at --budget 1.0:
the same candidates at timing budgets 3.0, 1.0 and 0.3 through one pool of one sandbox, one at a time."""

import json
import sys

sys.path.insert(0, "tests")
from test_honest_candidates import HONEST, _header, _problem

from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.evaluate import EvalConfig

names = ["constexpr_dtype", "kb_gelu_tanh", "libdevice_math", "libdevice_attribute_chain"]
with LocalEnv(PoolConfig(devices="cuda", sandboxes_per_device=1)) as env:
    for budget in (3.0, 1.0, 0.3):
        for name in names[: 4 if budget != 0.3 else 2]:
            source = (HONEST / f"{name}.py").read_text()
            problem = _problem(_header(source, "problem"))
            r = env.evaluate_batch([Task(problem, source, name)], EvalConfig(device="cuda", timing_budget_s=budget))[0]
            t = r.timing
            print(
                json.dumps(
                    {
                        "name": name,
                        "budget": budget,
                        "verdict": str(r.verdict),
                        "speedup": r.speedup,
                        "findings": [f.check for f in r.findings],
                        "reps": t and t.reps,
                        "feedback": r.feedback[60:260],
                    }
                ),
                flush=True,
            )
